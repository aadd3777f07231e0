// kiln's own matmul kernel for CUDA, compiled by NVRTC: the products cuBLAS does not do. Integer
// matmul (Int32, Int64), which the CPU supports with a loop that wraps on overflow, and Float32/
// Float64 products whose sizes do not fit cuBLAS's 32-bit int arguments. One thread per output
// element, a plain K-loop over any element strides (so no operand is ever copied for it).
// Integers accumulate in the unsigned type: the sum wraps modulo 2^bits in any order, so the
// result is bitwise the CPU's. Floats accumulate in their own type in k order (within the matmul
// bound of docs/testing.md, not bitwise: the CPU runs OpenBLAS).
//
// A launch computes a run of `batches` products whose operands lie at constant element strides
// (batch_a, batch_b; 0 for a broadcast operand) into a row-major C; blas_ops.cpp splits the
// broadcast batch into such runs.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/dtype.h"

namespace kiln::jit::cuda {

struct MatmulRun {
  const void* a = nullptr;  // device addresses of the first product's operands and output
  const void* b = nullptr;
  void* c = nullptr;
  int64_t batches = 1, M = 0, N = 0, K = 0;
  int64_t sam = 0, sak = 0, sbk = 0, sbn = 0;  // element strides of a [M, K] and b [K, N]
  int64_t batch_a = 0, batch_b = 0;            // element steps between products
};

// The kernel's name and its CUDA C++ source for `dtype` (Int32, Int64, Float32, Float64).
std::string matmul_kernel_name(DType dtype);
std::string matmul_kernel_source(DType dtype);

// Compiles (once per process and device, through the CUBIN cache) and queues the kernel on
// device `device`'s stream.
void launch_matmul_kernel(int device, DType dtype, const MatmulRun& run);

}  // namespace kiln::jit::cuda
