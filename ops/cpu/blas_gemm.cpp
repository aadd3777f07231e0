#include "ops/cpu/blas_gemm.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "ops/cpu/openblas_library.h"
#include "ops/cpu/xsmm_gemm.h"
#include "runtime/config.h"
#include "runtime/parallel.h"

namespace kiln::blas {

// kFlopsPerThread: OpenBLAS's own rule (0.3.21: one thread only up to M*N*K = 2^18) splits
// products that run faster on one thread. Measured with kiln-gemm-bench (perf/gemm_threads.cpp)
// on the shared 2-core AMD EPYC (AVX-512) development machine under other engineers' builds (load
// average 8), float32, figures in docs/performance-history.md ("Matmul threads"): up to 537 MFLOP
// (2*M*N*K; every product of mlp_train and rnn_loop) one thread won or tied in every run
// (64x256x256: 262 us on one thread, 4329 us on two; 256x1024x1024: 10.5 against 14.7 ms); at
// 2.1 GFLOP (4096x512x512) two threads won 1.3x in one run and tied in another. So one more
// thread per kFlopsPerThread: a second thread from 1.07 GFLOP.
//
// With kWholeCallMinThreads or more kiln threads (the 16-core Intel Xeon host of the GPU
// machine, 2026-12-02, kiln-gemm-bench at 4, 8 and 16 threads) one call on OpenBLAS's own
// threads beats both one thread and row blocks over kiln's threads, which each pack all of B:
// 64x256x256 (an rnn step's product) 76 us on one thread, 37-52 on 8-16, 72 in two row blocks;
// 256x1024x784 2800 / 453 (16) / 927 (rows); 4096x1536x512 40462 / 4199 / 5868. So from 4
// threads a product gets one OpenBLAS thread per kMnkPerBlasThread multiply-adds and no row
// blocks (plan_row_split): kiln-perf at 16 threads, mlp_train 5.8 -> 4.3-4.5 ms (jit), rnn_loop
// 12.0 -> 6.8-7.0, rnn_scan 12.4 -> 6.1-6.6. Batches of small products keep their split over
// kiln's threads (split_batches; attention's 64 products of 512x512x64 on 16 OpenBLAS threads
// each, one after another, made block 31 -> 50 ms).
int threads_for(int64_t M, int64_t N, int64_t K) {
  // Inside a kiln parallel region the TBB workers already use every core: BLAS stays on the
  // calling thread (OpenBLAS's pool would oversubscribe the arena).
  if (in_parallel_region()) return 1;
  const double flops = 2.0 * double(M) * double(N) * double(K);
  const double cap = std::max(1, num_threads());
  if (cap >= kWholeCallMinThreads)
    return int(std::clamp(std::floor(flops / 2 / kMnkPerBlasThread), 1.0, cap));
  return int(std::clamp(std::floor(flops / kFlopsPerThread), 1.0, cap));
}

bool split_batches(int64_t M, int64_t N, int64_t K) {
  if (in_parallel_region() || num_threads() < 2) return false;
  return 2.0 * double(M) * double(N) * double(K) <
         2 * kFlopsPerThread;  // one thread by the few-core rule
}

// Never more BLAS threads than KILN_NUM_THREADS, so TBB's arena and BLAS's pool do not
// oversubscribe the cores.
void set_threads(int n) {
  const OpenBlas& ob = openblas();
  if (ob.get_num_threads() != n) ob.set_num_threads(n);
}

Layout layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  // A dim of size 1 has no meaningful stride, so it never disqualifies a layout.
  if ((sc == 1 || cols == 1) && (rows == 1 || sr >= std::max<int64_t>(1, cols)))
    return {true, false, rows == 1 ? std::max<int64_t>(1, cols) : sr};
  if ((sr == 1 || rows == 1) && (cols == 1 || sc >= std::max<int64_t>(1, rows)))
    return {true, true, cols == 1 ? std::max<int64_t>(1, rows) : sc};
  return {};
}

template <class T>
void gemm(const Layout& la, const Layout& lb, int64_t M, int64_t N, int64_t K, const T* A,
          const T* B, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;  // an empty block of a split (split_point)
  if (ldc == 0) ldc = N;
  const OpenBlas& ob = openblas();
  const BlasTranspose ta = la.trans ? kTrans : kNoTrans;
  const BlasTranspose tb = lb.trans ? kTrans : kNoTrans;
  // One row of A (a 1-D operand on the left, a dot product): a level-2 or level-1 call. sgemm
  // with M = 1 took 19.0 ms for a dot product of 2^23 floats (2-core Zen 3 VM), sdot 3-4; no
  // row split applies to one row, so eager and the JIT's BLAS steps still make the same call.
  // One OpenBLAS thread: its threaded dot splits K, so its bits would follow the thread count.
  if (M == 1) {
    set_threads(1);
    const int incx = la.trans ? int(la.ld) : 1;  // A's row: its K elements
    if (N == 1) {
      const int incy = lb.trans ? 1 : int(lb.ld);  // B's column
      if constexpr (std::is_same_v<T, float>)
        C[0] = ob.sdot(int(K), A, incx, B, incy);
      else
        C[0] = ob.ddot(int(K), A, incx, B, incy);
      return;
    }
    // C = op(B)^T a: B stored [K, N] (then transposed) or [N, K] (as it is).
    const BlasTranspose t = lb.trans ? kNoTrans : kTrans;
    const int rows = lb.trans ? int(N) : int(K), cols = lb.trans ? int(K) : int(N);
    if constexpr (std::is_same_v<T, float>)
      ob.sgemv(kRowMajor, t, rows, cols, 1.0f, B, int(lb.ld), A, incx, 0.0f, C, 1);
    else
      ob.dgemv(kRowMajor, t, rows, cols, 1.0, B, int(lb.ld), A, incx, 0.0, C, 1);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (xsmm_gemm(la, lb, M, N, K, A, B, C, ldc)) return;
    ob.sgemm(kRowMajor, ta, tb, int(M), int(N), int(K), 1.0f, A, int(la.ld), B, int(lb.ld), 0.0f, C,
             int(ldc));
  } else {
    ob.dgemm(kRowMajor, ta, tb, int(M), int(N), int(K), 1.0, A, int(la.ld), B, int(lb.ld), 0.0, C,
             int(ldc));
  }
}
template void gemm<float>(const Layout&, const Layout&, int64_t, int64_t, int64_t, const float*,
                          const float*, float*, int64_t);
template void gemm<double>(const Layout&, const Layout&, int64_t, int64_t, int64_t, const double*,
                           const double*, double*, int64_t);

WholeGemm plan_whole_gemm(const TensorImpl* a, const TensorImpl* b, DType out_dtype) {
  WholeGemm g;
  const bool floating = out_dtype == DType::Float32 || out_dtype == DType::Float64;
  if (!a->device().is_cpu() || !b->device().is_cpu() || a->dim() != 2 || b->dim() != 2 ||
      !floating || a->dtype() != out_dtype || b->dtype() != out_dtype)
    return g;
  g.M = a->sizes()[0];
  g.N = b->sizes()[1];
  g.K = a->sizes()[1];
  if (g.M == 0 || g.N == 0 || g.K == 0 || g.M > INT_MAX || g.N > INT_MAX || g.K > INT_MAX) return g;
  g.la = layout(g.M, g.K, a->strides()[0], a->strides()[1]);
  g.lb = layout(g.K, g.N, b->strides()[0], b->strides()[1]);
  g.ok = g.la.ok && g.lb.ok && g.la.ld <= INT_MAX && g.lb.ld <= INT_MAX;
  return g;
}

void gemm_threaded(const Layout& la, const Layout& lb, int64_t M, int64_t N, int64_t K,
                   const float* A, const float* B, float* C, const AfterBlock* after) {
  const int threads = threads_for(M, N, K);
  if (threads < 2 || M < 2 || !xsmm_enabled()) {
    set_threads(threads);
    gemm<float>(la, lb, M, N, K, A, B, C);
    if (after != nullptr && M > 0 && N > 0) (*after)(0, M, 0, N);
    return;
  }
  // libxsmm's kernels run on the calling thread: the product in blocks over kiln's threads, whole
  // panels of columns each where there are enough, else rows too (ops/cpu/xsmm_gemm.h: the bits
  // of one call either way).
  const int64_t panels = (N + kPanelCols - 1) / kPanelCols;
  const int64_t col_blocks = std::min<int64_t>(threads, panels);
  const int64_t row_blocks =
      std::clamp<int64_t>(threads / col_blocks, 1, (M + kBlockRows - 1) / kBlockRows);
  set_threads(1);
  parallel_for(0, col_blocks * row_blocks, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c = i % col_blocks, r = i / col_blocks;
      const int64_t c0 = panels * c / col_blocks * kPanelCols;
      const int64_t c1 = std::min(N, panels * (c + 1) / col_blocks * kPanelCols);
      const int64_t r0 = split_point(M, r, row_blocks, kBlockRows);
      const int64_t r1 = split_point(M, r + 1, row_blocks, kBlockRows);
      if (c0 >= c1 || r0 >= r1) continue;
      gemm<float>(la, lb, r1 - r0, c1 - c0, K, A + offset_of(la, r0, 0), B + offset_of(lb, 0, c0),
                  C + r0 * N + c0, N);
      if (after != nullptr) (*after)(r0, r1, c0, c1);
    }
  });
}

void gemm_whole(const WholeGemm& g, const TensorImpl* a, const TensorImpl* b, TensorImpl* out,
                const AfterBlock* after) {
  if (out->dtype() == DType::Float32) {
    gemm_threaded(g.la, g.lb, g.M, g.N, g.K, static_cast<const float*>(a->data()),
                  static_cast<const float*>(b->data()), static_cast<float*>(out->data()), after);
    return;
  }
  set_threads(threads_for(g.M, g.N, g.K));
  gemm<double>(g.la, g.lb, g.M, g.N, g.K, static_cast<const double*>(a->data()),
               static_cast<const double*>(b->data()), static_cast<double*>(out->data()));
  if (after != nullptr) (*after)(0, g.M, 0, g.N);
}

int64_t split_min_mnk() { return xsmm_enabled() ? kXsmmSplitMinMnk : kGemmSplitMinMnk; }

RowSplit plan_row_split(const TensorImpl* a, const TensorImpl* b, DType out_dtype,
                        bool out_row_major) {
  RowSplit s;
  if (!a->device().is_cpu() || !b->device().is_cpu() || a->dim() != 2 || b->dim() != 2 ||
      out_dtype != DType::Float32 || a->dtype() != DType::Float32 || b->dtype() != DType::Float32 ||
      !out_row_major)
    return s;
  const int threads = in_parallel_region() ? 1 : num_threads();
  s.M = a->sizes()[0];
  s.N = b->sizes()[1];
  s.K = a->sizes()[1];
  if (threads < 2 || s.M > INT_MAX || s.N > INT_MAX || s.K > INT_MAX || s.K == 0) return s;
  if (threads >= kWholeCallMinThreads) return s;  // one call on OpenBLAS's threads
  s.la = layout(s.M, s.K, a->strides()[0], a->strides()[1]);
  s.lb = layout(s.K, s.N, b->strides()[0], b->strides()[1]);
  if (!s.la.ok || !s.lb.ok || s.la.ld > INT_MAX || s.lb.ld > INT_MAX) return s;
  // As many blocks as threads while the smallest block (floor(M / blocks) rows) holds the floor
  // (and, on libxsmm, a block of rows: its splits fall on them, so fewer rows make empty blocks).
  const bool xsmm = xsmm_enabled();
  const int64_t floor = xsmm ? kXsmmSplitMinMnk : kGemmSplitMinMnk;  // split_min_mnk()
  const int64_t min_rows = xsmm ? kBlockRows : 1;
  for (int64_t n = threads; n >= 2; --n)
    if ((s.M / n) * s.N * s.K >= floor && s.M / n >= min_rows) {
      s.blocks = n;
      break;
    }
  return s;
}

namespace {

// Rows [r0, r1) of a row-split product from raw pointers to op(A), op(B) and C.
void gemm_row_range(const RowSplit& s, const float* A, const float* B, float* C, int64_t r0,
                    int64_t r1) {
  gemm<float>(s.la, s.lb, r1 - r0, s.N, s.K, A + offset_of(s.la, r0, 0), B, C + r0 * s.N);
}

}  // namespace

void gemm_rows(const RowSplit& s, const TensorImpl* a, const TensorImpl* b, TensorImpl* out,
               int64_t r0, int64_t r1) {
  gemm_row_range(s, static_cast<const float*>(a->data()), static_cast<const float*>(b->data()),
                 static_cast<float*>(out->data()), r0, r1);
}

// Column blocks (kColSplitMaxMnk): on the 16-core Intel Xeon host of the GPU machine
// (2026-12-03, a harness of one call on 1-16 OpenBLAS threads against row and column blocks over
// 16 kiln threads, µs per call): 64x256x256 (an rnn step's product) 51 on threads_for's 4
// OpenBLAS threads, 45 on 8, 26 in 16 column blocks; 16x256x256 27-30 against 13; 64x512x512
// 144 (16 threads) against 134; 256x1024x784 670 against 693, so larger products keep one call.
// Row blocks each pack all of B and were slower than columns at every size there.
ColSplit plan_col_split(const TensorImpl* a, const TensorImpl* b, DType out_dtype) {
  ColSplit s;
  if (!a->device().is_cpu() || !b->device().is_cpu() || a->dim() != 2 || b->dim() != 2 ||
      out_dtype != DType::Float32 || a->dtype() != DType::Float32 || b->dtype() != DType::Float32)
    return s;
  if (in_parallel_region() || num_threads() < kWholeCallMinThreads) return s;
  s.M = a->sizes()[0];
  s.N = b->sizes()[1];
  s.K = a->sizes()[1];
  if (s.M < 2 || s.K == 0 || s.M > INT_MAX || s.N > INT_MAX || s.K > INT_MAX ||
      double(s.M) * double(s.N) * double(s.K) > double(kColSplitMaxMnk))
    return s;
  s.la = layout(s.M, s.K, a->strides()[0], a->strides()[1]);
  s.lb = layout(s.K, s.N, b->strides()[0], b->strides()[1]);
  if (!s.la.ok || !s.lb.ok || s.la.ld > INT_MAX || s.lb.ld > INT_MAX) return s;
  s.blocks = std::min<int64_t>(num_threads(), s.N / kColSplitMinCols);
  return s;
}

Split2d plan_split_2d(const TensorImpl* a, const TensorImpl* b, DType out_dtype) {
  Split2d s;
  s.rows = plan_row_split(a, b, out_dtype, true);
  if (s.rows.blocks < 2) s.cols = plan_col_split(a, b, out_dtype);
  return s;
}

Split2d::Bounds Split2d::bounds(int64_t i) const {
  if (rows.blocks >= 2) return {block_begin(rows, i), block_begin(rows, i + 1), 0, rows.N};
  return {0, cols.M, split_point(cols.N, i, cols.blocks, kPanelCols),
          split_point(cols.N, i + 1, cols.blocks, kPanelCols)};
}

void Split2d::block(int64_t i, const float* A, const float* B, float* C) const {
  const Bounds t = bounds(i);
  if (rows.blocks >= 2) {
    gemm_row_range(rows, A, B, C, t.r0, t.r1);
    return;
  }
  gemm<float>(cols.la, cols.lb, cols.M, t.c1 - t.c0, cols.K, A, B + offset_of(cols.lb, 0, t.c0),
              C + t.c0, cols.N);
}

bool gemm_2d(const TensorImpl* a, const TensorImpl* b, TensorImpl* out, const AfterBlock* after) {
  const Split2d s = plan_split_2d(a, b, out->dtype());
  if (s.blocks() >= 2) {
    const auto* A = static_cast<const float*>(a->data());
    const auto* B = static_cast<const float*>(b->data());
    auto* C = static_cast<float*>(out->data());
    set_threads(1);
    parallel_for(0, s.blocks(), 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        s.block(i, A, B, C);
        const Split2d::Bounds t = s.bounds(i);
        if (after != nullptr && t.r0 < t.r1 && t.c0 < t.c1) (*after)(t.r0, t.r1, t.c0, t.c1);
      }
    });
    return true;
  }
  const WholeGemm g = plan_whole_gemm(a, b, out->dtype());
  if (!g.ok) return false;
  gemm_whole(g, a, b, out, after);
  return true;
}

}  // namespace kiln::blas
