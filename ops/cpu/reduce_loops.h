// The inner loops and parallel drivers of the reductions (see reduce_plan.h for the layouts).
//
// Determinism: every output's result depends only on the input and the fixed constants below,
// never on the thread count: rows longer than kRowChunk are cut into fixed chunks whose partial
// results are combined in chunk order; columns are reduced per fixed-width slice.
// Accuracy: sums are pairwise (blocks of kPairBlock summed with 8 independent accumulators,
// which also lets the compiler vectorize, then halves added recursively), so the rounding error
// of an n-element float sum grows like log(n) rather than n.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/parallel.h"

namespace kiln::reduce {

inline constexpr int64_t kPairBlock = 128;  // a multiple of 8
inline constexpr int64_t kRowChunk = 65536;
inline constexpr int64_t kColWidth = 64;
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

// Reduces f(p[0..n)) with Op in 8 independent lanes (vectorizable), then combines the lanes in a
// fixed tree.
template <class Op, class A, class T, class F>
A lanes8(const T* p, int64_t n, F f) {
  A a[8];
  for (auto& v : a) v = Op::template identity<A>();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) a[k] = Op::apply(a[k], f(p[i + k]));
  A s = Op::apply(Op::apply(Op::apply(a[0], a[1]), Op::apply(a[2], a[3])),
                  Op::apply(Op::apply(a[4], a[5]), Op::apply(a[6], a[7])));
  for (; i < n; ++i) s = Op::apply(s, f(p[i]));
  return s;
}

// Pairwise sum of f(p[i]) in accumulator type A.
template <class A, class T, class F>
A pairwise_sum(const T* p, int64_t n, F f) {
  if (n <= kPairBlock) return lanes8<SumOp, A>(p, n, f);
  const int64_t half = (n / 2 + 7) / 8 * 8;
  return pairwise_sum<A>(p, half, f) + pairwise_sum<A>(p + half, n - half, f);
}

template <class A>
struct Cast {
  template <class T>
  A operator()(T v) const {
    return static_cast<A>(v);
  }
};

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
template <bool Greater, class T>
ArgPart<T> arg_range(const T* p, int64_t n, int64_t start) {
  ArgPart<T> r{p[0], start};
  for (int64_t i = 1; i < n; ++i)
    if (better<Greater>(p[i], r.value)) r = {p[i], start + i};
  return r;
}

// ---- drivers ----

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
  std::vector<Part> part(static_cast<size_t>(m * chunks));
  parallel_for(0, m * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t r = t / chunks, c = t % chunks;
      part[t] = range(r, c * kRowChunk, std::min(kRowChunk, n - c * kRowChunk));
    }
  });
  parallel_for(0, m, std::max<int64_t>(1, 4096 / chunks), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      Part acc = part[r * chunks];
      for (int64_t c = 1; c < chunks; ++c) acc = combine(acc, part[r * chunks + c]);
      store(r, acc);
    }
  });
}

// Columns: reduces rows p[0..n) (each `stride` apart) of width w into buf, blockwise pairwise.
template <class Op, class A, class T>
void col_block(const T* p, int64_t n, int64_t stride, int64_t w, A* buf) {
  if (n <= kColBlock) {
    for (int64_t j = 0; j < w; ++j) buf[j] = Op::template identity<A>();
    for (int64_t i = 0; i < n; ++i) {
      const T* row = p + i * stride;
      for (int64_t j = 0; j < w; ++j) buf[j] = Op::apply(buf[j], static_cast<A>(row[j]));
    }
    return;
  }
  const int64_t half = n / 2;
  A tmp[kColWidth];
  col_block<Op, A>(p, half, stride, w, buf);
  col_block<Op, A>(p + half * stride, n - half, stride, w, tmp);
  for (int64_t j = 0; j < w; ++j) buf[j] = Op::apply(buf[j], tmp[j]);
}

// Cols [outer, n, inner]: store(output index, A) for output (o, j) at o * inner + j. n >= 1.
template <class Op, class A, class T, class Store>
void run_cols(const T* x, int64_t outer, int64_t n, int64_t inner, const Store& store) {
  const int64_t slices = (inner + kColWidth - 1) / kColWidth;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (n * kColWidth));
  parallel_for(0, outer * slices, grain, [&](int64_t b, int64_t e) {
    A buf[kColWidth];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / slices, j0 = (t % slices) * kColWidth;
      const int64_t w = std::min(kColWidth, inner - j0);
      col_block<Op, A>(x + o * n * inner + j0, n, inner, w, buf);
      for (int64_t j = 0; j < w; ++j) store(o * inner + j0 + j, buf[j]);
    }
  });
}

}  // namespace kiln::reduce
