// The float GEMM path behind eager matmul (ops/matmul.cpp) and the JIT's BLAS steps
// (jit/plan/blas_step.h): how an operand's strides become a BLAS transpose flag and leading
// dim (a transposed view or a slice is never copied), the thread count per call, and a 2-D
// product split into row blocks over kiln's threads. Float32 products run on libxsmm's kernels
// where it generates code (ops/cpu/xsmm_gemm.h), everything else on OpenBLAS.
//
// Row blocks: rows [r0, r1) of C = A @ B are the product of A's rows [r0, r1) with all of B, one
// single-threaded call per block, the blocks over kiln's threads. Eager matmul and the JIT's
// BLAS steps split alike (same blocks, same calls), so they give the same bits on every CPU.
// On libxsmm, blocks (rows or columns, split_point) give the bits of one call. On OpenBLAS that
// depends on its kernels for the CPU: on the development machines (0.3.21, Cooperlake kernels)
// they do when every block holds at least kGemmSplitMinMnk multiply-adds (below that OpenBLAS
// takes its small-matrix path), on the GPU machine's CPU they do not always; nothing relies on
// it. Float64 products are never split (dgemm blocks differed from one call at every size here).
// Row blocks are for machines of 2 or 3 kiln threads: from kWholeCallMinThreads on, one call
// with threads_for's threads is faster (ops/cpu/blas_gemm.cpp: OpenBLAS's own, or blocks of
// libxsmm's over kiln's: gemm_threaded), and plan_row_split makes no blocks; a small product is
// split into column blocks there instead (plan_col_split, below). On OpenBLAS the bits may
// follow the thread count (its threaded 256x1024x784 differs from one thread's on the GPU
// machine's CPU), never the mode: eager and the JIT make the same calls.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>

#include "runtime/tensor.h"

namespace kiln::blas {

// Multiply-adds (M * N * K) each row block must hold for a split product to keep its bits.
inline constexpr int64_t kGemmSplitMinMnk = int64_t{1} << 21;
// Where libxsmm computes float32 products its blocks keep the bits at any size (split_point): a
// row block then only has to pay for its task, from kXsmmSplitMinMnk multiply-adds (~10 µs of a
// core). mlp_train's 256x10x1024, 256x1024x10 and 10x1024x256 products (2.6M each) ran on one
// thread under the OpenBLAS rule (docs/performance.md).
inline constexpr int64_t kXsmmSplitMinMnk = int64_t{1} << 19;
// The floor plan_row_split applies: kXsmmSplitMinMnk where libxsmm computes float32 products
// (ops/cpu/xsmm_gemm.h xsmm_enabled), else kGemmSplitMinMnk.
int64_t split_min_mnk();

// OpenBLAS threads for one product of M x N x K (1 inside a kiln parallel region; at most
// KILN_NUM_THREADS), and setting it (a process-wide setting, changed only when it differs).
int threads_for(int64_t M, int64_t N, int64_t K);
void set_threads(int n);
// Whether a batch of products of M x N x K runs over kiln's threads, one OpenBLAS thread each
// (small products: kFlopsPerThread), rather than one call after another on threads_for's.
bool split_batches(int64_t M, int64_t N, int64_t K);
// Flops per extra OpenBLAS thread (ops/cpu/blas_gemm.cpp: the measurement behind it).
inline constexpr double kFlopsPerThread = 512e6;
// From this many kiln threads on, a product is one OpenBLAS call on its own threads (one per
// kMnkPerBlasThread multiply-adds), never row blocks over kiln's (ops/cpu/blas_gemm.cpp), or,
// when small, column blocks over kiln's threads (plan_col_split).
inline constexpr int kWholeCallMinThreads = 4;
inline constexpr double kMnkPerBlasThread = 1 << 20;

// How one matrix (rows x cols, element strides sr / sc) goes to row-major BLAS: as is
// (trans false, ld = the row stride) or transposed (ld = the column stride); ok false when
// neither has unit stride (the caller copies it row-major first).
struct Layout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};
Layout layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc);
// The element offset of op(X)(r, c) for a matrix laid out as `l`: where a block of rows or
// columns of a product begins.
inline int64_t offset_of(const Layout& l, int64_t r, int64_t c) {
  return l.trans ? r + c * l.ld : r * l.ld + c;
}

// C [M, N] (row-major, leading dim ldc, N when 0) = op(A) [M, K] @ op(B) [K, N], Float32 or
// Float64, with the calling thread's OpenBLAS setting.
template <class T>
void gemm(const Layout& la, const Layout& lb, int64_t M, int64_t N, int64_t K, const T* A,
          const T* B, T* C, int64_t ldc = 0);

// What a caller does with each block of C [r0, r1) x [c0, c1) once it is computed (a JIT matmul
// step's epilogue: jit/plan/blas_step.cpp), on the thread that computed it, while it is in that
// core's cache: inside the product's parallel loop where the product is split over kiln's
// threads, else once over all of C on the calling thread after the call. Never for an empty block.
using AfterBlock = std::function<void(int64_t r0, int64_t r1, int64_t c0, int64_t c1)>;

// C [M, N] (row-major, leading dim N) = op(A) @ op(B), Float32, with threads_for's threads: one
// OpenBLAS call on that many of its threads, or, where libxsmm computes float32 products
// (ops/cpu/xsmm_gemm.h), blocks of C over as many of kiln's threads. `after`: AfterBlock.
void gemm_threaded(const Layout& la, const Layout& lb, int64_t M, int64_t N, int64_t K,
                   const float* A, const float* B, float* C, const AfterBlock* after = nullptr);

// A 2-D product out = a @ b (Float32 or Float64 alike, out row-major [M, N]) that BLAS takes
// without copies, as one call with threads_for's OpenBLAS threads: eager matmul's path for a 2-D
// product it does not split into row blocks, so a caller that runs it gets eager's bits. ok false
// otherwise (another dtype, an operand BLAS cannot take as it is, an empty product or sum).
struct WholeGemm {
  bool ok = false;
  int64_t M = 0, N = 0, K = 0;
  Layout la, lb;
};
WholeGemm plan_whole_gemm(const TensorImpl* a, const TensorImpl* b, DType out_dtype);
void gemm_whole(const WholeGemm& g, const TensorImpl* a, const TensorImpl* b, TensorImpl* out,
                const AfterBlock* after = nullptr);

// A 2-D Float32 product out = a @ b (out row-major) that BLAS takes without copies, big enough
// to split into `blocks` row blocks of split_min_mnk() multiply-adds each; blocks < 2 means
// "do not split" (the caller takes its other path).
struct RowSplit {
  int64_t blocks = 0;
  int64_t M = 0, N = 0, K = 0;
  Layout la, lb;
};
RowSplit plan_row_split(const TensorImpl* a, const TensorImpl* b, DType out_dtype,
                        bool out_row_major);
// Rows [r0, r1) of the split product (one OpenBLAS thread: call set_threads(1) first).
void gemm_rows(const RowSplit& s, const TensorImpl* a, const TensorImpl* b, TensorImpl* out,
               int64_t r0, int64_t r1);
// libxsmm's blocking (ops/cpu/xsmm_gemm.h): C's rows per kernel call, columns per packed panel.
inline constexpr int64_t kBlockRows = 32;
inline constexpr int64_t kPanelCols = 32;

// Where block i of `blocks` over [0, total) begins: total * i / blocks rounded to the nearest
// multiple of `unit` (total for i = blocks). Splits of a product fall on libxsmm's blocks of rows
// and panels of columns (ops/cpu/xsmm_gemm.h), so that every element of C is computed by the same
// kernel as in one call: the bits do not follow the thread count. A block may be empty.
inline int64_t split_point(int64_t total, int64_t i, int64_t blocks, int64_t unit) {
  return i >= blocks ? total : std::min(total, (total * i / blocks + unit / 2) / unit * unit);
}
// Row block i of n: [split_point(M, i, n, kBlockRows), split_point(M, i + 1, n, kBlockRows)).
inline int64_t block_begin(const RowSplit& s, int64_t i) {
  return split_point(s.M, i, s.blocks, kBlockRows);
}

// Column blocks: a small 2-D Float32 product on kWholeCallMinThreads or more kiln threads is
// split into blocks of C's columns over kiln's threads, one single-threaded sgemm each (its
// columns of B, all of A, C's columns at leading dim N): OpenBLAS's own threads cost more than
// such a product (ops/cpu/blas_gemm.cpp has the measurements). `blocks` < 2: not split.
struct ColSplit {
  int64_t blocks = 0;
  int64_t M = 0, N = 0, K = 0;
  Layout la, lb;
};
// Products up to this many multiply-adds, with at least kColSplitMinCols columns per block.
inline constexpr int64_t kColSplitMaxMnk = int64_t{1} << 24;
inline constexpr int64_t kColSplitMinCols = 16;
ColSplit plan_col_split(const TensorImpl* a, const TensorImpl* b, DType out_dtype);

// gemm_2d's choice of blocks for a product: row blocks, else column blocks; blocks() < 2 means
// one call (with threads_for's OpenBLAS threads). block() computes block i of C [M, N]
// (row-major, leading dim N) from raw pointers to op(A)'s and op(B)'s first elements, on one
// OpenBLAS thread: a caller may run the blocks of several products of one shape in one parallel
// loop (jit/plan/product_batch.h), making the very calls gemm_2d makes for each.
struct Split2d {
  RowSplit rows;
  ColSplit cols;
  int64_t blocks() const { return rows.blocks >= 2 ? rows.blocks : cols.blocks; }
  void block(int64_t i, const float* A, const float* B, float* C) const;
  struct Bounds {
    int64_t r0, r1, c0, c1;
  };
  Bounds bounds(int64_t i) const;  // the rows and columns of C that block i computes
};
Split2d plan_split_2d(const TensorImpl* a, const TensorImpl* b, DType out_dtype);

// The GEMM calls eager matmul makes for a 2-D product out = a @ b (out row-major [M, N], not
// overlapping a or b): row blocks over kiln's threads where plan_row_split makes them, column
// blocks where plan_col_split does, else one call with threads_for's OpenBLAS threads. false, with
// nothing computed, where BLAS cannot take the operands as they are (the caller takes another
// path). `after`: AfterBlock, for each block or once for the one call.
bool gemm_2d(const TensorImpl* a, const TensorImpl* b, TensorImpl* out,
             const AfterBlock* after = nullptr);

}  // namespace kiln::blas
