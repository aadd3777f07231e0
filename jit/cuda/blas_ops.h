// The CUDA form of the matmul primitive (ops/matmul.cpp: a [..., M, K] @ b [..., K, N] over
// broadcast batch dims; matmul, mm, bmm and the 1-D forms reach it through views), registered
// with the dispatcher's per-device seam from register_cuda_kernels().
//
// Float32/Float64 go to cuBLAS (runtime/cuda/cublas_library.h) on the device's stream. A matrix
// whose last two dims have unit stride in either order is passed as it is: a transposed view is
// an op flag (CUBLAS_OP_T), a slice along the columns a leading dimension; any other layout (a
// column step, a stride-0 dim) is made row-major first, as on the CPU. The broadcast batch is
// split into runs of products at constant strides (a broadcast operand steps by 0), each one
// cublas<S|D>gemmStridedBatched call (a plain gemm for a single product): a bmm or a batch
// broadcast along one side is one call. Integers (and float sizes beyond cuBLAS's int
// arguments) use kiln's own kernel (matmul_kernel.h), bitwise the CPU's for integers. K = 0
// writes zeros; an empty output launches nothing. Bool is refused by the meta, as on the CPU.
#pragma once

namespace kiln::jit::cuda {

void register_cuda_blas_kernels();

}  // namespace kiln::jit::cuda
