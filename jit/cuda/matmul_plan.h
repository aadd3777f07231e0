// How one matmul primitive call (a [..., M, K] @ b [..., K, N] over broadcast batch dims, into a
// row-major C) is cut into cuBLAS calls: pure host logic, tested in CI without a GPU by running
// the plan through an emulation of cuBLAS's column-major gemm (tests/test_cuda_cublas.cpp).
//
// cuBLAS is column-major: kiln computes C^T [N, M] = B^T [N, K] A^T [K, M], whose column-major
// C^T is the row-major C with ldc = N. A row-major operand with unit column stride is its own
// transpose read column-major (CUBLAS_OP_N, ld = its row stride); one with unit row stride (a
// transposed view) is a column-major matrix to transpose (CUBLAS_OP_T, ld = its column stride).
// Any other layout (a column step, a stride-0 dim) is not a BLAS layout: that operand is made
// row-major first (copy_a / copy_b), as on the CPU.
//
// The broadcast batch is split into runs of consecutive products whose operands advance by
// constant, non-negative element steps (0 along a broadcast operand): each run is one
// cublas<S|D>gemmStridedBatched call (a plain gemm for one product). A bmm, a batch broadcast
// along one side, and any batch of a contiguous operand are one run.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace kiln::jit::cuda {

struct BlasOperand {
  bool ok = false;     // a BLAS layout (else: copy the operand row-major first)
  bool trans = false;  // CUBLAS_OP_T (else CUBLAS_OP_N)
  int64_t ld = 0;
};

// The cuBLAS view of a row-major rows x cols matrix with element strides sr, sc.
BlasOperand blas_operand(int64_t rows, int64_t cols, int64_t sr, int64_t sc);

struct GemmRun {
  int64_t first = 0;               // index of the run's first product: C starts at first * M * N
  int64_t count = 1;               // products in the run
  int64_t a_offset = 0;            // elements from a's storage start to the first product's A
  int64_t b_offset = 0;            // and to its B
  int64_t step_a = 0, step_b = 0;  // elements between consecutive products' operands
};

struct MatmulPlan {
  int64_t M = 0, N = 0, K = 0;
  bool blas = false;  // cuBLAS (Float32/Float64 with sizes that fit its int); else kiln's kernel
  bool copy_a = false, copy_b = false;  // blas only: made row-major first, then planned again
  BlasOperand a, b;                     // blas only
  std::vector<GemmRun> runs;            // empty when the output is empty
};

// The plan for a @ b into a row-major output of `out_sizes` (the primitive's meta).
MatmulPlan plan_matmul(const TensorImpl* a, const TensorImpl* b, const DimVector& out_sizes);

}  // namespace kiln::jit::cuda
