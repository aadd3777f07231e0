// Float32 GEMM on libxsmm's generated kernels (Debian's libxsmm-dev), kiln's first choice for
// float32 products on CPUs where libxsmm generates code (SSE3 and up, AVX-512 included);
// OpenBLAS (ops/cpu/openblas_library.h) takes Float64, dot products and matrix-vector products,
// and every float32 product where libxsmm has no kernel. docs/building.md "Float32 products run
// on libxsmm's generated kernels" has the measurements: as fast as OpenBLAS's best kernels on
// large products, much faster on small ones (an RNN step's 64x256x256), and independent of
// OPENBLAS_CORETYPE.
//
// The algorithm: C's columns in panels of kPanelCols (blas_gemm.h); for each panel, op(B)'s columns
// are packed contiguously ([K, width], a copy or, for a transposed B, libxsmm's transpose; a
// row-major B is read where it lies for at most kPackMinRows rows of C), then
// every block of kBlockRows rows of C is one kernel call per block of K (the first overwrites C,
// the rest add to it), reading op(A) where it lies (a transposed A is the kernel's transposed
// operand).
//
// Bits: libxsmm's kernels for different block shapes accumulate in different orders, so an
// element's bits depend on where the blocks of its call fall. Splits of a product over threads
// fall on these blocks (blas::split_point): the same kernels compute every element, and the bits
// do not follow the thread count. They may differ from one CPU (kernel) to another.
#pragma once
#include <cstdint>

#include "ops/cpu/blas_gemm.h"

namespace kiln::blas {

inline constexpr int64_t kDepthBlock = 1024;  // K per kernel call (C's tile stays in L1 between)
inline constexpr int64_t kPackMinRows = 64;   // a row-major op(B) is packed for more rows of C

// Whether float32 products use libxsmm: KILN_GEMM=auto (the default) and libxsmm generates code
// for this CPU (KILN_GEMM=openblas: OpenBLAS only).
bool xsmm_enabled();

// C [M, N] (row-major, leading dim ldc) = op(A) [M, K] @ op(B) [K, N] on the calling thread;
// false, with nothing computed, where libxsmm has no kernel (the caller calls OpenBLAS).
bool xsmm_gemm(const Layout& la, const Layout& lb, int64_t M, int64_t N, int64_t K, const float* A,
               const float* B, float* C, int64_t ldc);

}  // namespace kiln::blas
