// The inner loops and parallel drivers of the reductions (see reduce_plan.h for the layouts).
//
// Determinism: every output's result depends only on the input and the fixed constants below,
// never on the thread count: rows longer than kRowChunk (columns longer than kColRows) are cut
// into fixed chunks whose partial results are combined in a fixed pairwise tree (earlier chunk
// on the left); columns are reduced per fixed-width slice.
// Accuracy: sums are pairwise (blocks of kPairBlock summed with 8 independent accumulators, one
// 8-lane vector (lanes8), then halves added recursively), so the rounding error of an n-element
// float sum grows like log(n) rather than n.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/cpu/vecmath/gnu_vec_ops.h"
#include "runtime/config.h"
#include "runtime/parallel.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Included by the per-ISA kernel file: everything here lives in the ISA's own inline namespace so
// no inline or template symbol is shared between ISAs at link time (tests/cmake/check_isa_symbols).
#ifndef KILN_ISA_NS
#error "reduce_loops.h is for the per-ISA kernel files (ops/cpu/*_kernels.cpp)"
#endif
namespace kiln::reduce {
inline namespace KILN_ISA_NS {

inline constexpr int64_t kPairBlock = 128;  // a multiple of 8
inline constexpr int64_t kRowChunk = 65536;
inline constexpr int64_t kColWidthWide = 4096;  // column slices (run_cols, run_arg_cols)
inline constexpr int64_t kColRows = 2048;       // column chunks: parallelism when outputs are few
inline constexpr int64_t kColBlock = 64;

// ---- elementwise combiners ----

template <class T>
constexpr bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}
// max/min that propagate NaN (PyTorch's amax/amin).
template <class T>
T max_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return (a > b || a != a) ? a : b;
  else
    return a > b ? a : b;
}
template <class T>
T min_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return (a < b || a != a) ? a : b;
  else
    return a < b ? a : b;
}

struct SumOp {
  template <class A>
  static A identity() {
    return A(0);
  }
  template <class A>
  static A apply(A a, A b) {
    return a + b;
  }
};
struct ProdOp {
  template <class A>
  static A identity() {
    return A(1);
  }
  template <class A>
  static A apply(A a, A b) {
    return a * b;
  }
};
struct MaxOp {
  template <class A>
  static A identity() {
    if constexpr (std::is_floating_point_v<A>)
      return -std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::lowest();
  }
  template <class A>
  static A apply(A a, A b) {
    return max_nan(a, b);
  }
};
struct MinOp {
  template <class A>
  static A identity() {
    if constexpr (std::is_floating_point_v<A>)
      return std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::max();
  }
  template <class A>
  static A apply(A a, A b) {
    return min_nan(a, b);
  }
};

// ---- contiguous row kernels ----

// f for a plain reduction: each element converted to the accumulator type.
template <class A>
struct Cast {
  template <class T>
  A operator()(T v) const {
    return static_cast<A>(v);
  }
};

// Reduces f(p[0..n)) with Op in 8 independent lanes (vectorizable), then combines the lanes in a
// fixed tree.
// Float sums and products keep the 8 lanes in one GCC vector: GCC vectorized the array form
// as 8 scalar chains (vaddss with shuffles, about one element a cycle: eager layer_norm spent
// 75% of its time there); lane k still takes elements 8i + k, so the bits are the same.
template <class Op, class A, class T, class F>
A lanes8(const T* p, int64_t n, F f) {
  A a[8];
  for (auto& v : a) v = Op::template identity<A>();
  int64_t i = 0;
  if constexpr (std::is_floating_point_v<A> &&
                (std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>)) {
    using V [[gnu::vector_size(8 * sizeof(A))]] = A;
    using VT [[gnu::vector_size(8 * sizeof(T))]] = T;
    V acc;
    for (int k = 0; k < 8; ++k) acc[k] = a[k];
    for (; i + 8 <= n; i += 8) {
      V t;
      if constexpr (std::is_same_v<F, Cast<A>> && std::is_floating_point_v<T>) {
        VT x;
        std::memcpy(&x, p + i, sizeof x);
        t = __builtin_convertvector(x, V);
      } else if constexpr (sizeof(V) <= vecmath::kNativeVecBytes) {
        // A generic lambda computes 8 lanes at once where they fit the ISA's registers (wider
        // vectors by value change the ABI: GCC's -Wpsabi).
        if constexpr (std::is_invocable_r_v<V, F, VT>) {
          VT x;
          std::memcpy(&x, p + i, sizeof x);
          t = f(x);
        } else {
          for (int k = 0; k < 8; ++k) t[k] = f(p[i + k]);
        }
      } else {
        for (int k = 0; k < 8; ++k) t[k] = f(p[i + k]);
      }
      if constexpr (std::is_same_v<Op, SumOp>)
        acc = acc + t;
      else
        acc = acc * t;
    }
    for (int k = 0; k < 8; ++k) a[k] = acc[k];
  }
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) a[k] = Op::apply(a[k], f(p[i + k]));
  A s = Op::apply(Op::apply(Op::apply(a[0], a[1]), Op::apply(a[2], a[3])),
                  Op::apply(Op::apply(a[4], a[5]), Op::apply(a[6], a[7])));
  for (; i < n; ++i) s = Op::apply(s, f(p[i]));
  return s;
}

#if defined(__SSE2__)
template <class T>
struct SseVec {};
template <>
struct SseVec<float> {
  using type = __m128;
};
template <>
struct SseVec<double> {
  using type = __m128d;
};
#endif

// Max (MaxOp) or min (MinOp) of p[0..n), NaN propagating. GCC does not vectorize the NaN-aware
// select of max_nan, so float and double get SSE2 lanes: max/min plus an unordered-compare mask
// that turns the result into NaN when any element was NaN. Exact, so no rounding question.
template <class Op, class T>
T range_extreme(const T* p, int64_t n) {
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    constexpr bool kMax = std::is_same_v<Op, MaxOp>;
    constexpr int64_t W = std::is_same_v<T, float> ? 4 : 2;
    using V = typename SseVec<T>::type;
    auto load = [](const T* q) {
      if constexpr (W == 4)
        return _mm_loadu_ps(q);
      else
        return _mm_loadu_pd(q);
    };
    auto pick = [](V a, V b) {
      if constexpr (W == 4)
        return kMax ? _mm_max_ps(a, b) : _mm_min_ps(a, b);
      else
        return kMax ? _mm_max_pd(a, b) : _mm_min_pd(a, b);
    };
    auto unord = [](V u, V v) {
      if constexpr (W == 4)
        return _mm_or_ps(u, _mm_cmpunord_ps(v, v));
      else
        return _mm_or_pd(u, _mm_cmpunord_pd(v, v));
    };
    int64_t i = 0;
    T s = Op::template identity<T>();
    if (n >= 4 * W) {
      V init, zero;
      if constexpr (W == 4)
        init = _mm_set1_ps(s), zero = _mm_setzero_ps();
      else
        init = _mm_set1_pd(s), zero = _mm_setzero_pd();
      V m0 = init, m1 = init, u0 = zero, u1 = zero;
      for (; i + 2 * W <= n; i += 2 * W) {
        const V v0 = load(p + i), v1 = load(p + i + W);
        m0 = pick(m0, v0);
        m1 = pick(m1, v1);
        u0 = unord(u0, v0);
        u1 = unord(u1, v1);
      }
      int mask;
      if constexpr (W == 4)
        mask = _mm_movemask_ps(_mm_or_ps(u0, u1));
      else
        mask = _mm_movemask_pd(_mm_or_pd(u0, u1));
      if (mask != 0) return std::numeric_limits<T>::quiet_NaN();
      alignas(16) T lanes[2 * W];
      if constexpr (W == 4)
        _mm_store_ps(lanes, m0), _mm_store_ps(lanes + W, m1);
      else
        _mm_store_pd(lanes, m0), _mm_store_pd(lanes + W, m1);
      for (T v : lanes) s = Op::apply(s, v);
    }
    for (; i < n; ++i) s = Op::apply(s, p[i]);
    return s;
  }
#endif
  return lanes8<Op, T>(p, n, [](T v) { return v; });
}

// Pairwise sum of f(p[i]) in accumulator type A.
template <class A, class T, class F>
A pairwise_sum(const T* p, int64_t n, F f) {
  if (n <= kPairBlock) return lanes8<SumOp, A>(p, n, f);
  const int64_t half = (n / 2 + 7) / 8 * 8;
  return pairwise_sum<A>(p, half, f) + pairwise_sum<A>(p + half, n - half, f);
}

// Index of the first maximum (Greater) or minimum of p[0..n), n >= 1; a NaN counts as the
// extreme (the first NaN wins), as in PyTorch.
template <bool Greater, class T>
bool better(T v, T best) {
  if constexpr (std::is_floating_point_v<T>) {
    if (best != best) return false;
    if (v != v) return true;
  }
  return Greater ? v > best : v < best;
}
template <class T>
struct ArgPart {
  T value;
  int64_t index;
};
// Two passes over the (cache-resident) piece: the extreme value with the vectorized lanes, then
// the first index holding it (the first NaN when it is NaN).
template <bool Greater, class T>
ArgPart<T> arg_range(const T* p, int64_t n, int64_t start) {
  using Op = std::conditional_t<Greater, MaxOp, MinOp>;
  const T best = range_extreme<Op, T>(p, n);
  int64_t i = 0;
  if (is_nan(best)) {
    while (!is_nan(p[i])) ++i;
  } else {
    while (p[i] != best) ++i;
  }
  return {best, start + i};
}

// ---- drivers ----

// Combines parts[0..count) into parts[0] with a fixed pairwise tree, keeping chunk order.
template <class Part, class Combine>
void tree_combine(Part* parts, int64_t count, const Combine& combine) {
  for (int64_t s = 1; s < count; s *= 2)
    for (int64_t c = 0; c + s < count; c += 2 * s) parts[c] = combine(parts[c], parts[c + s]);
}

// Rows [m, n]: range(row, start, len) -> Part reduces a contiguous piece of row `row`;
// combine(earlier, later) merges partials; store(row, Part) writes the output. n >= 1.
template <class Part, class Range, class Combine, class Store>
void run_rows(int64_t m, int64_t n, const Range& range, const Combine& combine,
              const Store& store) {
  const int64_t chunks = (n + kRowChunk - 1) / kRowChunk;
  if (chunks == 1) {
    parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / n), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) store(r, range(r, 0, n));
    });
    return;
  }
  std::unique_ptr<Part[]> part(new Part[static_cast<size_t>(m * chunks)]);  // not vector<bool>
  parallel_for(0, m * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t r = t / chunks, c = t % chunks;
      part[t] = range(r, c * kRowChunk, std::min(kRowChunk, n - c * kRowChunk));
    }
  });
  parallel_for(0, m, std::max<int64_t>(1, 4096 / chunks), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      tree_combine(part.get() + r * chunks, chunks, combine);
      store(r, part[r * chunks]);
    }
  });
}

// What a column reduction folds: each element as loaded (AsLoaded), or its squared distance
// from its column's mean (CenteredSquares: var's second pass, `(x - mu) * (x - mu)` as var over
// rows computes it). `at(first)` is the policy for a block whose first column is output `first`;
// scalar and vec take a column counted from the block's first; vec transforms 16 columns at
// once (their means: the array is padded by 16 past the last output).
struct AsLoaded {
  AsLoaded at(int64_t) const { return *this; }
  template <class A>
  A scalar(A v, int64_t) const {
    return v;
  }
  template <class V>
  void vec(V&, int64_t) const {}
};
template <class T>
struct CenteredSquares {
  const T* mu;
  CenteredSquares at(int64_t first) const { return {mu + first}; }
  T scalar(T v, int64_t col) const { return (v - mu[col]) * (v - mu[col]); }
  template <class V>  // a vector of n lanes (16, or the ISA's width)
  void vec(V& v, int64_t col) const {
    // Lane by lane: the whole-vector form `(v - m) * (v - m)` (m the 16 means memcpy'd) gave the
    // baseline ISA's kernels 1-ulp differences in the sanitizer build (-O3 + ASan/UBSan, GCC 12;
    // ReduceIsa.ColumnsFollowTheDocumentedOrder), never in release; this form is exact in both.
    constexpr int n = static_cast<int>(sizeof(V) / sizeof(T));
    for (int k = 0; k < n; ++k) v[k] = (v[k] - mu[col + k]) * (v[k] - mu[col + k]);
  }
};

// Columns: 16 of them from p (column `col` of the block) down rows [0, n) (each `stride` apart)
// into acc, in order.
template <class Op, class A, class T, class Pre>
inline void col_leaf16(const T* p, int64_t n, int64_t stride, const Pre& pre, int64_t col, A* acc) {
  for (int k = 0; k < 16; ++k) acc[k] = Op::template identity<A>();
  for (int64_t i = 0; i < n; ++i) {
    const T* row = p + i * stride;
    for (int k = 0; k < 16; ++k)
      acc[k] = Op::apply(acc[k], pre.scalar(static_cast<A>(row[k]), col + k));
  }
}

// 16 columns as one GCC vector (lanes in registers: GCC does not vectorize two or more
// accumulator arrays side by side). Float inputs reduced in their own type only.
// (A member typedef: GCC ignores vector_size on an alias template's dependent type.)
template <class A>
struct ColVecOf {
  typedef A type __attribute__((vector_size(16 * sizeof(A))));
};
template <class A>
using ColVec = typename ColVecOf<A>::type;
template <class A, class T>
inline constexpr bool kColVec = std::is_same_v<A, T>&& std::is_floating_point_v<T>;

// acc = Op::apply(acc, b) lane by lane (the same expression). By reference: a vector wider than
// the baseline ISA's registers passed by value changes the ABI (GCC's -Wpsabi).
// Max and min go through vectors of the ISA's own width: GCC 12 splits a wider vector's
// arithmetic into registers but lowers its compares and selects lane by lane into scalar code
// (vucomiss, seta, vpinsrd: [8192, 1024].amax(0) ran 34 ms on AVX2 where .sum(0) ran 9).
template <class Op, class V>
inline void col_fold(V& acc, const V& b) {
  if constexpr (std::is_same_v<Op, SumOp>) {
    acc = acc + b;
  } else if constexpr (std::is_same_v<Op, ProdOp>) {
    acc = acc * b;
  } else {
    using A = std::remove_cvref_t<decltype(acc[0])>;
    constexpr int kBytes = vecmath::kNativeVecBytes;
    typedef A N __attribute__((vector_size(kBytes)));
    static_assert(sizeof(V) % kBytes == 0);
    for (size_t h = 0; h < sizeof(V); h += kBytes) {
      N x, y;
      std::memcpy(&x, reinterpret_cast<const char*>(&acc) + h, kBytes);
      std::memcpy(&y, reinterpret_cast<const char*>(&b) + h, kBytes);
      if constexpr (std::is_same_v<Op, MaxOp>)
        x = ((x > y) | (x != x)) ? x : y;
      else
        x = ((x < y) | (x != x)) ? x : y;
      std::memcpy(reinterpret_cast<char*>(&acc) + h, &x, kBytes);
    }
  }
}

// A leaf of at least kColRowsWide columns, walked in memory order: row by row across all w
// columns, each column's accumulator in buf (L1) instead of a register. Each column is folded
// from the identity in row order, as col_leaf16 folds it: the same bits. Why: col_leaf16 walks
// 16 columns (one cache line) down the leaf's rows and then the next 16: on a row-major input
// whose rows are a page apart every access is a new page for the hardware prefetchers, and
// [8192, 1024].sum(0) ran at a third of the memory's speed (7 ms on one Zen 3 core against 2.5
// for this walk; narrow rows gain too: [262144, 64] 6.5-7.0 -> 3.7-4.3 ms, [167772, 100]
// 16.5 -> 4.5 on two cores). Under 32 columns col_leaf16's registers (four runs side by side)
// stay ahead ([1048576, 16] 4.2-4.4 ms against 5.1-7.0 this way).
inline constexpr int64_t kColRowsWide = 32;
// The accumulators sit in `room` (w + 4096 / sizeof(A) elements) half a page from the rows'
// columns (mod 4096), so that no load of a row waits on a store to an accumulator whose address
// has the same low 12 bits (4K aliasing, with rows a page apart).
template <class Op, class A, class Pre>
void col_leaf_rows(const A* p, int64_t n, int64_t stride, int64_t w, const Pre& pre, A* out,
                   A* room) {
  constexpr int kBytes = vecmath::kNativeVecBytes, kLanes = kBytes / sizeof(A);
  typedef A NV __attribute__((vector_size(kBytes)));
  const uintptr_t want = (reinterpret_cast<uintptr_t>(p) + 2048) & 4095;
  A* buf = reinterpret_cast<A*>(reinterpret_cast<char*>(room) +
                                ((want - reinterpret_cast<uintptr_t>(room)) & 4095));
  const int64_t w16 = w - w % 16;
  for (int64_t j = 0; j < w; ++j) buf[j] = Op::template identity<A>();
  for (int64_t i = 0; i < n; ++i) {
    const A* row = p + i * stride;
    // Vectors of the ISA's width (a 64-byte one GCC 12 stores in 16-byte halves: the next
    // row's loads of it could not be forwarded).
    for (int64_t j = 0; j < w16; j += kLanes) {
      NV acc, x;
      std::memcpy(&x, row + j, kBytes);
      pre.vec(x, j);
      std::memcpy(&acc, buf + j, kBytes);
      col_fold<Op>(acc, x);
      std::memcpy(buf + j, &acc, kBytes);
    }
    for (int64_t j = w16; j < w; ++j) buf[j] = Op::apply(buf[j], pre.scalar(row[j], j));
  }
  std::memcpy(out, buf, static_cast<size_t>(w) * sizeof(A));
}

// N sibling leaves (rows [0, len[b]) from p[b], lengths within one of each other) folded side
// by side, each in its own order, as col_leaf16 one after the other: N independent chains in
// flight instead of one latency-bound chain.
// The 16 lanes fold in vectors of the ISA's own width (`pre` applied to each), in arrays GCC
// keeps in registers: through 64-byte vectors GCC 12 kept the accumulators on the stack, stored
// in 16-byte halves and reloaded in 32-byte loads that the store buffer cannot forward
// ([4194304, 4].sum(0) 12.7 ms on AVX2). The same operation per lane: the same bits.
template <class Op, class A, int N, class Pre>
inline void col_leaves16(const A* const (&p)[N], const int64_t (&len)[N], int64_t stride,
                         const Pre& pre, int64_t col, ColVec<A> (&acc)[N]) {
  using V = ColVec<A>;
  constexpr int kBytes = vecmath::kNativeVecBytes;
  constexpr int kParts = static_cast<int>(sizeof(V)) / kBytes, kLanes = kBytes / sizeof(A);
  typedef A NV __attribute__((vector_size(kBytes)));
  int64_t lo = len[0];
  for (int b = 1; b < N; ++b) lo = std::min(lo, len[b]);
  NV a[N][kParts];
  for (int b = 0; b < N; ++b)
    for (int q = 0; q < kParts; ++q) a[b][q] = NV{} + Op::template identity<A>();
  auto step = [&](int b, int64_t i) {
    for (int q = 0; q < kParts; ++q) {
      NV v;
      std::memcpy(&v, p[b] + i * stride + q * kLanes, kBytes);
      pre.vec(v, col + q * kLanes);
      col_fold<Op>(a[b][q], v);
    }
  };
  for (int64_t i = 0; i < lo; ++i)
    for (int b = 0; b < N; ++b) step(b, i);
  for (int b = 0; b < N; ++b)
    for (int64_t i = lo; i < len[b]; ++i) step(b, i);
  for (int b = 0; b < N; ++b) std::memcpy(&acc[b], a[b], sizeof(V));
}

// Narrow slices (w <= NW columns, NW lanes of 16 or 32 bytes): N sibling leaves side by side as
// col_leaves16 folds them, in windows of NW lanes (the lanes past w read the next row's values
// and are dropped). The same operation per lane in the same order: the same bits. Why: the
// 16-lane window loads 64 bytes per row of 16 ([4194304, 4].sum(0): four times the data, most
// loads split across two cache lines): 8.3 GB/s on one Zen 4 core, 11.8 in these windows.
template <class Op, class A, int N, int NW, class Pre>
inline void col_leaves_narrow(const A* const (&p)[N], const int64_t (&len)[N], int64_t stride,
                              const Pre& pre, A (&out)[N][NW]) {
  static_assert(std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>);
  typedef A NV __attribute__((vector_size(NW * sizeof(A))));
  int64_t lo = len[0];
  for (int b = 1; b < N; ++b) lo = std::min(lo, len[b]);
  NV a[N];
  for (int b = 0; b < N; ++b) a[b] = NV{} + Op::template identity<A>();
  auto step = [&](int b, int64_t i) {
    NV v;
    std::memcpy(&v, p[b] + i * stride, sizeof v);
    pre.vec(v, 0);
    if constexpr (std::is_same_v<Op, SumOp>)
      a[b] = a[b] + v;
    else
      a[b] = a[b] * v;
  };
  // A leaf is a short stream (64 rows: 1 KiB of a [n, 4] input), too short for the hardware
  // prefetchers to reach ahead: each stream fetches 256 rows ahead (the next blocks' leaves).
  // [4194304, 4].sum(0) on one Zen 4 core: 6.1 -> 5.4 ms (the 16-lane windows: 7.7).
  for (int64_t i = 0; i < lo; ++i)
    for (int b = 0; b < N; ++b) {
      // (integer arithmetic: past the last block the address may lie outside the tensor)
      __builtin_prefetch(reinterpret_cast<const void*>(
          reinterpret_cast<uintptr_t>(p[b]) +
          static_cast<uintptr_t>((i + 4 * kColBlock) * stride) * sizeof(A)));
      step(b, i);
    }
  for (int b = 0; b < N; ++b)
    for (int64_t i = lo; i < len[b]; ++i) step(b, i);
  for (int b = 0; b < N; ++b) std::memcpy(out[b], &a[b], sizeof(NV));
}

// Columns: reduces rows p[0..n) (each `stride` apart) of width w into buf, blockwise pairwise:
// halves at n / 2 down to leaves of at most kColBlock rows, each folded row by row in order
// (jit/loop/row_program.h's column program is this recursion). `end`: one past the input's last
// element. Slices of kColRowsWide columns and more walk each run in memory order
// (col_leaf_rows). Narrower ones go 16 columns at a time in registers, stored once (no
// store/load of buf per element, no 4K-aliasing stalls between buf and rows a page apart);
// fewer than 16 left (a narrow tensor,
// or a wide one's last columns) take a whole 16-column window per row where the window stays
// before `end`, the lanes past w reading the next row's values and dropped: the columns' order is
// the same, and [2^20, 4].sum(0) runs vectorized instead of one scalar chain per column. Two
// to four sibling leaves are folded side by side (col_leaves16): a leaf's chain is latency-bound.
// `pre`: what is folded (AsLoaded, CenteredSquares), for the block's columns. `tmp`: the
// halves' scratch, col_scratch(w) elements.
template <class Op, class A, class T, class Pre>
void col_block(const T* p, int64_t n, int64_t stride, int64_t w, const T* end, const Pre& pre,
               A* buf, A* tmp) {
  // Whether 16 columns from j fit before `end` on each of the block's rows.
  auto window_fits = [&](int64_t j) { return end - (p + (n - 1) * stride + j) >= 16; };
  // Wide slices: leaves in memory order (col_leaf_rows), the same halves down to them.
  const bool wide = kColVec<A, T> && w >= kColRowsWide;
  if (n <= kColBlock) {
    if constexpr (kColVec<A, T>) {
      if (wide) {
        col_leaf_rows<Op, A>(p, n, stride, w, pre, buf, tmp);
        return;
      }
    }
    int64_t j = 0;
    for (; j < w && (j + 16 <= w || window_fits(j)); j += 16) {
      A acc[16];
      col_leaf16<Op, A>(p + j, n, stride, pre, j, acc);
      for (int64_t k = 0; k < 16 && j + k < w; ++k) buf[j + k] = acc[k];
    }
    for (; j < w; ++j) {
      A a = Op::template identity<A>();
      for (int64_t i = 0; i < n; ++i)
        a = Op::apply(a, pre.scalar(static_cast<A>(p[i * stride + j]), j));
      buf[j] = a;
    }
    return;
  }
  const int64_t half = n / 2;
  if constexpr (kColVec<A, T> && std::is_same_v<Pre, AsLoaded> &&
                (std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>)) {
    // Narrow slices: the same leaves side by side in 16- or 32-byte windows (col_leaves_narrow).
    const bool four = half > kColBlock && n <= 4 * kColBlock;
    constexpr int64_t kW16 = 16 / sizeof(A), kW32 = 32 / sizeof(A);
    auto fits = [&](int64_t nw) { return w == nw || end - (p + (n - 1) * stride) >= nw; };
    auto narrow = [&]<int NW>() {  // the leaves' windows, folded as col_block's halves
      const int64_t q0 = half / 2, q1 = (n - half) / 2;
      if (four) {
        const A* const starts[4] = {p, p + q0 * stride, p + half * stride,
                                    p + (half + q1) * stride};
        const int64_t lens[4] = {q0, half - q0, q1, n - half - q1};
        A o4[4][NW];
        col_leaves_narrow<Op, A, 4, NW>(starts, lens, stride, pre, o4);
        for (int64_t k = 0; k < w; ++k)
          buf[k] = Op::apply(Op::apply(o4[0][k], o4[1][k]), Op::apply(o4[2][k], o4[3][k]));
      } else {
        const A* const starts[2] = {p, p + half * stride};
        const int64_t lens[2] = {half, n - half};
        A o2[2][NW];
        col_leaves_narrow<Op, A, 2, NW>(starts, lens, stride, pre, o2);
        for (int64_t k = 0; k < w; ++k) buf[k] = Op::apply(o2[0][k], o2[1][k]);
      }
    };
    if ((four || n <= 2 * kColBlock) && w <= kW32) {
      if (w <= kW16 && fits(kW16)) return narrow.template operator()<static_cast<int>(kW16)>();
      if (fits(kW32)) return narrow.template operator()<static_cast<int>(kW32)>();
    }
  }
  if constexpr (kColVec<A, T>) {
    // Two or four leaves side by side (the recursion's leaves when n <= 128, or when both
    // halves split once more into leaves: 64 < n / 2, n <= 256); 16-column windows throughout.
    const bool four = half > kColBlock && n <= 4 * kColBlock;
    if (!wide && (four || n <= 2 * kColBlock) && (w % 16 == 0 || window_fits(w - w % 16))) {
      using V = ColVec<A>;
      const int64_t q0 = half / 2, q1 = (n - half) / 2;
      for (int64_t j = 0; j < w; j += 16) {
        A out[16];
        if (four) {
          V acc[4];
          const A* const starts[4] = {p + j, p + q0 * stride + j, p + half * stride + j,
                                      p + (half + q1) * stride + j};
          const int64_t lens[4] = {q0, half - q0, q1, n - half - q1};
          col_leaves16<Op, A, 4>(starts, lens, stride, pre, j, acc);
          col_fold<Op>(acc[0], acc[1]);
          col_fold<Op>(acc[2], acc[3]);
          col_fold<Op>(acc[0], acc[2]);
          std::memcpy(out, &acc[0], sizeof acc[0]);
        } else {
          V acc[2];
          const A* const starts[2] = {p + j, p + half * stride + j};
          const int64_t lens[2] = {half, n - half};
          col_leaves16<Op, A, 2>(starts, lens, stride, pre, j, acc);
          col_fold<Op>(acc[0], acc[1]);
          std::memcpy(out, &acc[0], sizeof acc[0]);
        }
        for (int64_t k = 0; k < 16 && j + k < w; ++k) buf[j + k] = out[k];
      }
      return;
    }
  }
  col_block<Op, A>(p, half, stride, w, end, pre, buf, tmp + w);
  col_block<Op, A>(p + half * stride, n - half, stride, w, end, pre, tmp, tmp + w);
  for (int64_t j = 0; j < w; ++j) buf[j] = Op::apply(buf[j], tmp[j]);
}

// Levels of col_block's halving above its leaves for a block of n rows.
constexpr int col_depth(int64_t n) { return n <= kColBlock ? 0 : 1 + col_depth(n - n / 2); }
// The scratch col_block takes for a chunk (at most kColRows rows) of w columns: w per level,
// and the room of col_leaf_rows.
template <class A>
constexpr int64_t col_scratch(int64_t w) {
  return col_depth(kColRows) * w + w + 4096 / static_cast<int64_t>(sizeof(A));
}

// The work items of a reduction in the Cols layout [outer, n, inner] (run_cols, run_arg_cols):
// (outer block, slice of at most `cap` columns, chunk of at most kColRows rows), numbered
// t = (o * slices + slice) * chunks + chunk; `grain` items per parallel_for task. Fewer items
// than threads: narrower slices (of at least 256 columns), so that every thread has a part.
struct ColWork {
  int64_t n, inner, slices, width, chunks, grain;
  ColWork(int64_t outer, int64_t n_, int64_t inner_, int64_t cap) : n(n_), inner(inner_) {
    chunks = (n + kColRows - 1) / kColRows;
    slices = (inner + cap - 1) / cap;
    const int64_t threads = num_threads(), blocks = std::max<int64_t>(1, outer * chunks);
    if (blocks * slices < threads)
      slices = std::max(slices, std::min((threads + blocks - 1) / blocks, inner / 256));
    width = std::min(inner, (inner / slices + 15) / 16 * 16);
    slices = (inner + width - 1) / width;
    grain = std::max<int64_t>(1, kParallelGrain / (std::min(n, kColRows) * width));
  }
  struct Slice {
    int64_t o, j0, w;  // outer block, first column, columns
    int64_t first;     // its first output, o * inner + j0
  };
  Slice slice(int64_t os) const {  // os = o * slices + slice
    const int64_t o = os / slices, j0 = (os % slices) * width;
    return {o, j0, std::min(width, inner - j0), o * inner + j0};
  }
  struct Piece {
    Slice s;
    int64_t r0, r1;  // its rows
  };
  Piece piece(int64_t t) const {
    const int64_t r0 = (t % chunks) * kColRows;
    return {slice(t / chunks), r0, std::min(n, r0 + kColRows)};
  }
};

// Cols [outer, n, inner]: store(output index, A) for output (o, j) at o * inner + j. n >= 1.
// Work items are (outer block, column slice, row chunk); row chunks' partial vectors are then
// combined per output with tree_combine. `pre`: what is folded (AsLoaded, CenteredSquares).
template <class Op, class A, class T, class Store, class Pre = AsLoaded>
void run_cols(const T* x, int64_t outer, int64_t n, int64_t inner, const Store& store,
              const Pre& pre = Pre{}) {
  const ColWork work(outer, n, inner, kColWidthWide);
  const int64_t slices = work.slices, width = work.width, chunks = work.chunks;
  const T* end = x + outer * n * inner;
  auto reduce_piece = [&](int64_t t, A* buf, A* tmp) {
    const auto [s, r0, r1] = work.piece(t);
    col_block<Op, A>(x + (s.o * n + r0) * inner + s.j0, r1 - r0, inner, s.w, end, pre.at(s.first),
                     buf, tmp);
    return std::pair{s.first, s.w};
  };
  // Not std::vector: vector<bool> packs bits, which threads cannot write independently.
  auto scratch = [&](int64_t extra) {
    return std::unique_ptr<A[]>(new A[static_cast<size_t>(extra + col_scratch<A>(width))]);
  };
  if (chunks == 1) {
    parallel_for(0, outer * slices, work.grain, [&](int64_t b, int64_t e) {
      const std::unique_ptr<A[]> room = scratch(width);
      A* buf = room.get();
      for (int64_t t = b; t < e; ++t) {
        auto [first, w] = reduce_piece(t, buf, buf + width);
        for (int64_t j = 0; j < w; ++j) store(first + j, buf[j]);
      }
    });
    return;
  }
  std::unique_ptr<A[]> part(new A[static_cast<size_t>(outer * slices * chunks * width)]);
  parallel_for(0, outer * slices * chunks, work.grain, [&](int64_t b, int64_t e) {
    const std::unique_ptr<A[]> tmp = scratch(0);
    for (int64_t t = b; t < e; ++t) reduce_piece(t, part.get() + t * width, tmp.get());
  });
  parallel_for(0, outer * slices, 1, [&](int64_t b, int64_t e) {
    for (int64_t os = b; os < e; ++os) {
      A* p = part.get() + os * chunks * width;
      for (int64_t s = 1; s < chunks; s *= 2)
        for (int64_t c = 0; c + s < chunks; c += 2 * s)
          for (int64_t j = 0; j < width; ++j)
            p[c * width + j] = Op::apply(p[c * width + j], p[(c + s) * width + j]);
      const ColWork::Slice sl = work.slice(os);
      for (int64_t j = 0; j < sl.w; ++j) store(sl.first + j, p[j]);
    }
  });
}

// Argmax / argmin over the Cols layout [outer, n, inner]: store(output index, i) with i the first
// reduced row holding its column's extreme, the first NaN where there is one (what arg_range
// gives along a row). Exact, so any order of rows gives the same index: each work item (outer
// block, column slice, row chunk) scans its rows keeping, per column, the best value and its row
// (a strict `better`: a tie keeps the earlier row), branch-free so that the columns vectorize;
// the chunks' parts are then combined in row order, a tie keeping the earlier chunk's row.
template <bool Greater, class T, class Store>
void run_arg_cols(const T* x, int64_t outer, int64_t n, int64_t inner, const Store& store) {
  const ColWork work(outer, n, inner, kColWidthWide);
  const int64_t slices = work.slices, width = work.width, chunks = work.chunks;
  const T* end = x + outer * n * inner;
  // Rows [r0, r1) of `lanes` columns from p, the first w of them stored. lanes > w: a 16-column
  // window (the lanes past w read the next row's values and are dropped), so that the columns'
  // loop vectorizes when w is small (a run-time trip count: GCC unrolled a fixed 16 into scalar
  // compares and branches, 14 ms for [2^20, 4]). Rows are counted from r0 in an integer as wide
  // as T (a chunk has at most kColRows rows): the comparison's lanes and the rows' lanes then
  // have one width and the loop vectorizes (int64 rows beside float values did not). best and
  // row are the task's scratch (`Lanes`), restrict: GCC would otherwise store and reload them
  // every row, since they might alias p. Rows are walked whole across the slice (up to
  // kColWidthWide columns), so that a row-major input streams from memory.
  using I = std::conditional_t<sizeof(T) <= 4, int32_t, int64_t>;
  struct Lanes {
    std::unique_ptr<T[]> best;
    std::unique_ptr<I[]> row;
    explicit Lanes(int64_t w)
        : best(new T[static_cast<size_t>(w + 16)]), row(new I[static_cast<size_t>(w + 16)]) {}
  };
  auto rows_of = [&](const T* p, int64_t lanes, int64_t w, int64_t r0, int64_t r1,
                     T* __restrict best, I* __restrict row, T* best_out, int64_t* row_out) {
    for (int64_t j = 0; j < lanes; ++j) best[j] = p[j], row[j] = 0;
    const I count = static_cast<I>(r1 - r0);
    for (I i = 1; i < count; ++i) {
      p += inner;
      for (int64_t j = 0; j < lanes; ++j) {
        const T v = p[j], b = best[j];
        bool take;
        if constexpr (std::is_floating_point_v<T>)  // better(v, b), without branches
          take = (b == b) & ((v != v) | (Greater ? v > b : v < b));
        else
          take = Greater ? v > b : v < b;
        best[j] = take ? v : b;
        row[j] = take ? i : row[j];
      }
    }
    for (int64_t j = 0; j < w; ++j) best_out[j] = best[j], row_out[j] = r0 + row[j];
  };
  auto scan = [&](int64_t t, Lanes& l, T* best, int64_t* row) {
    const auto [s, r0, r1] = work.piece(t);
    const T* p = x + (s.o * n + r0) * inner + s.j0;
    const bool window = s.w < 16 && end - (p + (r1 - r0 - 1) * inner) >= 16;  // 16 columns fit
    rows_of(p, window ? 16 : s.w, s.w, r0, r1, l.best.get(), l.row.get(), best, row);
    return std::pair{s.first, s.w};
  };
  if (chunks == 1) {
    parallel_for(0, outer * slices, work.grain, [&](int64_t b, int64_t e) {
      Lanes l(width);
      std::unique_ptr<T[]> best(new T[static_cast<size_t>(width)]);
      std::unique_ptr<int64_t[]> row(new int64_t[static_cast<size_t>(width)]);
      for (int64_t t = b; t < e; ++t) {
        auto [first, w] = scan(t, l, best.get(), row.get());
        for (int64_t j = 0; j < w; ++j) store(first + j, row[j]);
      }
    });
    return;
  }
  const size_t parts = static_cast<size_t>(outer * slices * chunks * width);
  std::unique_ptr<T[]> best(new T[parts]);
  std::unique_ptr<int64_t[]> row(new int64_t[parts]);
  parallel_for(0, outer * slices * chunks, work.grain, [&](int64_t b, int64_t e) {
    Lanes l(width);
    for (int64_t t = b; t < e; ++t) scan(t, l, best.get() + t * width, row.get() + t * width);
  });
  parallel_for(0, outer * slices, 1, [&](int64_t b, int64_t e) {
    for (int64_t os = b; os < e; ++os) {
      T* bv = best.get() + os * chunks * width;
      int64_t* br = row.get() + os * chunks * width;
      const ColWork::Slice sl = work.slice(os);
      for (int64_t c = 1; c < chunks; ++c)
        for (int64_t j = 0; j < sl.w; ++j)
          if (better<Greater>(bv[c * width + j], bv[j])) {
            bv[j] = bv[c * width + j];
            br[j] = br[c * width + j];
          }
      for (int64_t j = 0; j < sl.w; ++j) store(sl.first + j, br[j]);
    }
  });
}

}  // namespace KILN_ISA_NS
}  // namespace kiln::reduce
