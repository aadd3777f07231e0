// The CUDA form of the matmul primitive (ops/matmul.cpp: a [..., M, K] @ b [..., K, N] over
// broadcast batch dims; matmul, mm, bmm and the 1-D forms reach it through views), registered
// with the dispatcher's per-device seam from register_cuda_kernels().
//
// Float32/Float64 go to cuBLAS (runtime/cuda/cublas_library.h) on the device's stream, cut into
// calls by matmul_plan.h: transposed views as op flags, column slices as leading dims, only
// non-BLAS layouts (a column step, a stride-0 dim) made row-major first, as on the CPU; the
// broadcast batch as runs of cublas<S|D>gemmStridedBatched. Integers (and float sizes beyond
// cuBLAS's int arguments) use kiln's own kernel (matmul_kernel.h), bitwise the CPU's for
// integers. K = 0 writes zeros; an empty output launches nothing. The meta (shared with the CPU)
// accepts and refuses the same calls on both devices.
#pragma once

namespace kiln::jit::cuda {

void register_cuda_blas_kernels();

}  // namespace kiln::jit::cuda
