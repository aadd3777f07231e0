// The eager kernels of the reductions: plan the layout (ops/cpu/reduce_plan.h), then run the
// row or column loops of ops/cpu/reduce_loops.h for the op, instantiated per input dtype.
// Compiled once per ISA (see ops/cpu/isa.h); ops/reduce.cpp calls the active ISA's reduce_eager.
// The loops keep a fixed accumulation order, so every ISA gives the same bits.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/cpu/reduce_loops.h"
#include "ops/cpu/reduce_plan.h"
#include "ops/cpu/vecmath/exp_log.h"
#include "ops/cpu/vecmath/gnu_vec_ops.h"
#include "ops/reduce.h"
#include "ops/reduce_isa.h"

#ifndef KILN_ISA_NS
#error "KILN_ISA_NS must name the ISA namespace"
#endif

namespace kiln::KILN_ISA_NS {

namespace {

using namespace reduce;

// ---- kernels: one per op family, instantiated per input dtype T ----

// Mean divides by n - correction (attrs.ints[1]: 0 from the API; 1 in the JIT's column var,
// whose centered squares' mean is var's sum / (n - 1)), and is NaN over no elements.
template <class T, class O>
void sum_like(OpId op, const ReducePlan& p, O* out, int64_t correction = 0) {
  // Integers accumulate in uint64_t: wrapping on overflow like PyTorch's Int64, without the
  // undefined behaviour of signed overflow (the conversion back to int64_t is modular).
  using A = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
  const int64_t n = p.n;
  auto finish = [&](A a) -> O {
    if (op == OpId::Mean) {
      if constexpr (std::is_floating_point_v<A>)
        if (n == 0) return std::numeric_limits<O>::quiet_NaN();
      return static_cast<O>(a / static_cast<A>(n - correction));
    }
    return static_cast<O>(a);
  };
  if (n == 0) {
    const A id = op == OpId::Prod ? A(1) : A(0);
    for (int64_t i = 0; i < p.outputs(); ++i) out[i] = finish(id);  // mean: 0/0 = NaN
    return;
  }
  const T* x = p.ptr<T>();
  auto store = [&](int64_t i, A a) { out[i] = finish(a); };
  if (p.kind == ReducePlan::Kind::Cols) {
    if (op == OpId::Prod)
      run_cols<ProdOp, A>(x, p.outer, n, p.inner, store);
    else
      run_cols<SumOp, A>(x, p.outer, n, p.inner, store);
    return;
  }
  if (op == OpId::Prod) {
    run_rows<A>(
        p.outer, n,
        [&](int64_t r, int64_t s, int64_t len) {
          return lanes8<ProdOp, A>(x + r * n + s, len, Cast<A>{});
        },
        [](A a, A b) { return a * b; }, store);
  } else {
    run_rows<A>(
        p.outer, n,
        [&](int64_t r, int64_t s, int64_t len) {
          return pairwise_sum<A>(x + r * n + s, len, Cast<A>{});
        },
        [](A a, A b) { return a + b; }, store);
  }
}

template <class Op, class T>
void extreme(const ReducePlan& p, T* out) {
  const T* x = p.ptr<T>();
  const int64_t n = p.n;
  auto store = [&](int64_t i, T v) { out[i] = v; };
  if (n == 0) {  // only where asked for (ops/reduce.cpp: Amax / Amin's attrs.ints[1])
    for (int64_t i = 0; i < p.outputs(); ++i) out[i] = Op::template identity<T>();
    return;
  }
  if (p.kind == ReducePlan::Kind::Cols) return run_cols<Op, T>(x, p.outer, n, p.inner, store);
  run_rows<T>(
      p.outer, n,
      [&](int64_t r, int64_t s, int64_t len) { return range_extreme<Op, T>(x + r * n + s, len); },
      [](T a, T b) { return Op::apply(a, b); }, store);
}

template <bool Greater, class T>
void arg_extreme(const ReducePlan& p, int64_t* out) {
  const T* x = p.ptr<T>();
  const int64_t n = p.n;
  if (p.kind == ReducePlan::Kind::Cols) {  // columns scanned in place, vectorized along them
    run_arg_cols<Greater, T>(x, p.outer, n, p.inner, [&](int64_t i, int64_t r) { out[i] = r; });
    return;
  }
  run_rows<ArgPart<T>>(
      p.outer, n,
      [&](int64_t r, int64_t s, int64_t len) { return arg_range<Greater>(x + r * n + s, len, s); },
      [](ArgPart<T> a, ArgPart<T> b) { return better<Greater>(b.value, a.value) ? b : a; },
      [&](int64_t i, ArgPart<T> a) { out[i] = a.index; });
}

// pairwise_sum of exp(C(p[i]) - sh): the same blocks and order as pairwise_sum, each leaf's exps
// computed by kiln's vector math (ops/cpu/vecmath/, the bits of the exp op) into a buffer first.
template <class C, class T>
C pairwise_sum_exp(const T* p, int64_t n, C sh) {
  if (n <= kPairBlock) {
    C buf[kPairBlock];
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<C>(p[i]) - sh;
    vecmath::map_contiguous<C, vecmath::kNativeVecBytes>(
        buf, buf, n, [](const auto& o, auto v) { return vecmath::exp<true>(o, v); });
    return lanes8<SumOp, C>(buf, n, Cast<C>{});
  }
  const int64_t half = (n / 2 + 7) / 8 * 8;
  return pairwise_sum_exp<C>(p, half, sh) + pairwise_sum_exp<C>(p + half, n - half, sh);
}

// What the column sums of logsumexp fold (col_block's `pre`): exp(x - shift) of each column's
// shift, by the vector math (the exp op's bits: every path below is lane-wise the same function).
// The shifted values are formed lane by lane, as CenteredSquares does.
template <class C>
struct ShiftedExp {
  const C* shift;
  ShiftedExp at(int64_t first) const { return {shift + first}; }
  C scalar(C v, int64_t col) const {
    return vecmath::apply_scalar(v - shift[col],
                                 [](const auto& o, auto u) { return vecmath::exp<true>(o, u); });
  }
  template <class V>  // a vector of n lanes (16, or the ISA's width)
  void vec(V& v, int64_t col) const {
    constexpr int n = static_cast<int>(sizeof(V) / sizeof(C));
    C buf[n];
    for (int k = 0; k < n; ++k) buf[k] = v[k] - shift[col + k];
    vecmath::map_contiguous<C, vecmath::kNativeVecBytes>(
        buf, buf, n, [](const auto& o, auto u) { return vecmath::exp<true>(o, u); });
    std::memcpy(&v, buf, sizeof buf);
  }
};

// logsumexp = m + log(sum(exp(x - m))) with m the row max (0 where it is infinite, so all -inf
// rows give -inf and a +inf gives +inf), computed in C. Over columns (the Cols plan): the
// columns' maxima, then their sums of exp(x - m), both in the column order, in place.
template <class T, class C>
void logsumexp_rows(const ReducePlan& p, C* out) {
  const int64_t n = p.n, m = p.outer;
  if (n == 0) {
    for (int64_t i = 0; i < m; ++i) out[i] = -std::numeric_limits<C>::infinity();
    return;
  }
  const T* x = p.ptr<T>();
  if (p.kind == ReducePlan::Kind::Cols) {
    std::vector<C> shift(static_cast<size_t>(p.outputs() + 16), C(0));  // vec reads 16 at once
    run_cols<MaxOp, C>(x, p.outer, n, p.inner,
                       [&](int64_t i, C v) { shift[i] = std::isinf(v) ? C(0) : v; });
    run_cols<SumOp, C>(
        x, p.outer, n, p.inner,
        [&](int64_t i, C v) {
          out[i] =
              vecmath::apply_scalar(v, [](const auto& o, auto u) { return vecmath::log(o, u); }) +
              shift[i];
        },
        ShiftedExp<C>{shift.data()});
    return;
  }
  std::vector<C> shift(static_cast<size_t>(m));
  run_rows<C>(
      m, n,
      [&](int64_t r, int64_t s, int64_t len) {
        if constexpr (std::is_same_v<T, C>)
          return range_extreme<MaxOp, C>(x + r * n + s, len);
        else
          return lanes8<MaxOp, C>(x + r * n + s, len, Cast<C>{});
      },
      [](C a, C b) { return max_nan(a, b); },
      [&](int64_t i, C v) { shift[i] = std::isinf(v) ? C(0) : v; });
  run_rows<C>(
      m, n,
      [&](int64_t r, int64_t s, int64_t len) {
        return pairwise_sum_exp<C>(x + r * n + s, len, shift[r]);
      },
      [](C a, C b) { return a + b; },
      [&](int64_t i, C v) {
        out[i] =
            vecmath::apply_scalar(v, [](const auto& o, auto u) { return vecmath::log(o, u); }) +
            shift[i];
      });
}

// Two passes: the mean, then the pairwise sum of squared deviations, divided by n - unbiased.
template <class T>
void var_rows(const ReducePlan& p, bool unbiased, T* out) {
  const int64_t n = p.n, m = p.outer;
  if (n == 0) {
    for (int64_t i = 0; i < m; ++i) out[i] = std::numeric_limits<T>::quiet_NaN();
    return;
  }
  const T* x = p.ptr<T>();
  if (p.kind == ReducePlan::Kind::Cols) {
    // Columns: their means in the column order, then their squared distances from them in the
    // same order (no gather into rows; the JIT runs var as this eager step).
    std::vector<T> mean(static_cast<size_t>(p.outputs() + 16), T(0));  // vec reads 16 at once
    run_cols<SumOp, T>(x, p.outer, n, p.inner,
                       [&](int64_t i, T v) { mean[i] = v / static_cast<T>(n); });
    const T denom = static_cast<T>(n - (unbiased ? 1 : 0));
    run_cols<SumOp, T>(
        x, p.outer, n, p.inner, [&](int64_t i, T v) { out[i] = v / denom; },
        CenteredSquares<T>{mean.data()});
    return;
  }
  std::vector<T> mean(static_cast<size_t>(m));
  auto sum_range = [&](int64_t r, int64_t s, int64_t len) {
    return pairwise_sum<T>(x + r * n + s, len, Cast<T>{});
  };
  auto add = [](T a, T b) { return a + b; };
  run_rows<T>(m, n, sum_range, add, [&](int64_t i, T v) { mean[i] = v / static_cast<T>(n); });
  const T denom = static_cast<T>(n - (unbiased ? 1 : 0));
  run_rows<T>(
      m, n,
      [&](int64_t r, int64_t s, int64_t len) {
        const T mu = mean[r];
        return pairwise_sum<T>(x + r * n + s, len, [mu](auto v) { return (v - mu) * (v - mu); });
      },
      add, [&](int64_t i, T v) { out[i] = v / denom; });
}

template <class T>
void all_any(bool any, const ReducePlan& p, bool* out) {
  if (p.n == 0 || p.outer == 0) {
    out[0] = !any;
    return;
  }
  const T* x = p.ptr<T>();
  const int64_t n = p.n;
  run_rows<unsigned char>(
      1, n,
      [&](int64_t, int64_t s, int64_t len) -> unsigned char {
        const T* q = x + s;
        unsigned char acc = any ? 0 : 1;
        // Branch-free over the whole piece: the loop vectorizes and costs the same every time.
        if (any)
          for (int64_t i = 0; i < len; ++i) acc |= static_cast<unsigned char>(q[i] != T(0));
        else
          for (int64_t i = 0; i < len; ++i) acc &= static_cast<unsigned char>(q[i] != T(0));
        return acc;
      },
      [any](unsigned char a, unsigned char b) -> unsigned char { return any ? (a | b) : (a & b); },
      [&](int64_t, unsigned char v) { out[0] = v != 0; });
}
// One whole row of n elements in run_rows's order: pieces of kRowChunk combined in tree_combine's
// tree (what the JIT's row program follows, jit/loop/row_program.h).
template <class A, class Range, class Combine>
A whole_row(int64_t n, const Range& range, const Combine& combine) {
  const int64_t chunks = (n + kRowChunk - 1) / kRowChunk;
  if (chunks <= 1) return range(0, n);
  std::vector<A> part(static_cast<size_t>(chunks));
  for (int64_t c = 0; c < chunks; ++c)
    part[static_cast<size_t>(c)] = range(c * kRowChunk, std::min(kRowChunk, n - c * kRowChunk));
  tree_combine(part.data(), chunks, combine);
  return part[0];
}

// softmax of contiguous rows: the row's amax (NaN propagating), exp(x - max) by the vector math
// (the exp op's bits), their sum, y = e * (1 / sum); the max and the sum in amax's and sum's
// eager order, so softmax is bit for bit the chain of those ops (the JIT lowers it so).
template <class T>
void softmax_rows_impl(const T* x, T* y, int64_t m, int64_t n, bool log) {
  auto row = [&](const T* xr, T* yr) {
    const T mx = whole_row<T>(
        n, [&](int64_t s, int64_t len) { return range_extreme<MaxOp, T>(xr + s, len); },
        [](T a, T b) { return max_nan(a, b); });
    for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] - mx;
    vecmath::map_contiguous<T, vecmath::kNativeVecBytes>(
        yr, yr, n, [](const auto& o, auto v) { return vecmath::exp<true>(o, v); });
    const T sum = whole_row<T>(
        n, [&](int64_t s, int64_t len) { return pairwise_sum<T>(yr + s, len, Cast<T>{}); },
        [](T a, T b) { return a + b; });
    if (log) {  // log_softmax: x - (mx + log(sum)), the exps summed in the same order
      const T lse =
          mx + vecmath::apply_scalar(sum, [](const auto& o, auto v) { return vecmath::log(o, v); });
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] - lse;
      return;
    }
    const T r = T(1) / sum;
    for (int64_t j = 0; j < n; ++j) yr[j] *= r;
  };
  parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) row(x + r * n, y + r * n);
               });
}

// layer_norm of contiguous rows (ops/layer_norm.cpp), in T: the row's mean as the eager mean op
// computes it (pairwise sums of the row's chunks, combined in run_rows's tree, / n), the mean of
// the squared deviations likewise, rstd = 1 / sqrt(var + T(eps)), y = ((x - mean) * rstd) * w +
// b: bit for bit that chain of eager ops, which the JIT fuses into a row kernel
// (jit/passes/layer_norm_split.h). w and b may be null.
template <class T>
void layer_norm_rows_impl(const T* x, const T* w, const T* b, T* y, int64_t m, int64_t n,
                          double eps) {
  auto add = [](T p, T q) { return p + q; };
  const T eps_t = static_cast<T>(eps);
  auto row = [&](const T* xr, T* yr) {
    const T mean =
        whole_row<T>(
            n, [&](int64_t s, int64_t len) { return pairwise_sum<T>(xr + s, len, Cast<T>{}); },
            add) /
        static_cast<T>(n);
    const T var = whole_row<T>(
                      n,
                      [&](int64_t s, int64_t len) {
                        return pairwise_sum<T>(xr + s, len, [mean](auto v) {
                          const auto d = v - mean;  // lane-wise on 8 values at once
                          return d * d;
                        });
                      },
                      add) /
                  static_cast<T>(n);
    const T rstd = T(1) / std::sqrt(var + eps_t);
    for (int64_t j = 0; j < n; ++j) {
      T v = (xr[j] - mean) * rstd;
      if (w != nullptr) v *= w[j];
      if (b != nullptr) v += b[j];
      yr[j] = v;
    }
  };
  parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) row(x + r * n, y + r * n);
               });
}

// cross_entropy's total (ops/reduce.h cross_entropy_total): per row, in the logits' dtype T, the
// amax (softmax's and the amax op's order) and the pairwise sum of exp(x - max) in the sum op's
// order, lse = max + log(sum); the row's loss double(lse) - double(x[t]); then the sum of the row
// losses as the sum op sums a Float64 vector. Ignored rows cost nothing.
template <class T>
double cross_entropy_total_impl(const T* x, const int64_t* t, int64_t m, int64_t n,
                                int64_t ignore) {
  std::vector<double> loss(static_cast<size_t>(m), 0.0);
  parallel_for(
      0, m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n)),
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          if (t[r] == ignore) continue;
          const T* xr = x + r * n;
          const T mx = whole_row<T>(
              n, [&](int64_t s, int64_t len) { return range_extreme<MaxOp, T>(xr + s, len); },
              [](T a, T b) { return max_nan(a, b); });
          const T sum = whole_row<T>(
              n, [&](int64_t s, int64_t len) { return pairwise_sum_exp<T>(xr + s, len, mx); },
              [](T a, T b) { return a + b; });
          const T lse = mx + vecmath::apply_scalar(
                                 sum, [](const auto& o, auto v) { return vecmath::log(o, v); });
          loss[static_cast<size_t>(r)] = static_cast<double>(lse) - static_cast<double>(xr[t[r]]);
        }
      });
  return whole_row<double>(
      m,
      [&](int64_t s, int64_t len) {
        return pairwise_sum<double>(loss.data() + s, len, Cast<double>{});
      },
      [](double p, double q) { return p + q; });
}

// softmax along a dim that is not innermost (ops/softmax.cpp): three passes over [outer, n,
// inner] in memory order. The columns' maxima and their sums of exp(x - max) are run_cols'
// (the column order of every column reduction: chunks, halves, 64-row runs; its wide slices
// stream a row-major input), then each row is written: exp(x - max) * (1 / sum), or x - (max +
// log(sum)). exp and log are kiln's vector math at this ISA's width (the bits of the exp/log
// ops on every ISA). Until 2026-11-30 a block of 64 columns was swept down all the rows three
// times, its sums in row order: with rows a page apart every access was a new page for the
// prefetchers, and softmax(x, 0) of [8192, 1024] took 31-47 ms against 9 over dim 1.
constexpr int kSoftmaxVecBytes = vecmath::kNativeVecBytes;
constexpr auto vexp = [](const auto& o, auto v) { return vecmath::exp<true>(o, v); };
constexpr auto vlog = [](const auto& o, auto v) { return vecmath::log(o, v); };

template <class T>
void softmax_cols_impl(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  const size_t outs = static_cast<size_t>(outer * inner);
  std::vector<T> mx(outs + 16, T(0)), sum(outs + 16, T(0));  // ShiftedExp reads 16 at once
  run_cols<MaxOp, T>(x, outer, n, inner, [&](int64_t i, T v) { mx[i] = v; });
  run_cols<SumOp, T>(
      x, outer, n, inner, [&](int64_t i, T v) { sum[i] = v; }, ShiftedExp<T>{mx.data()});
  if (log) {
    vecmath::map_contiguous<T, kSoftmaxVecBytes>(sum.data(), sum.data(), static_cast<int64_t>(outs),
                                                 vlog);
    for (size_t i = 0; i < outs; ++i) sum[i] = mx[i] + sum[i];  // logsumexp
  } else {
    for (size_t i = 0; i < outs; ++i) sum[i] = T(1) / sum[i];
  }
  constexpr int64_t kSpan = 256;  // columns of a row through the stack buffer at once
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / inner);
  parallel_for(0, outer * n, grain, [&](int64_t r0, int64_t r1) {
    T e[kSpan];
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = x + r * inner;
      T* out = y + r * inner;
      const T* m = mx.data() + (r / n) * inner;
      const T* s = sum.data() + (r / n) * inner;
      for (int64_t c0 = 0; c0 < inner; c0 += kSpan) {
        const int64_t w = std::min(kSpan, inner - c0);
        if (log) {
          for (int64_t i = 0; i < w; ++i) out[c0 + i] = row[c0 + i] - s[c0 + i];
          continue;
        }
        for (int64_t i = 0; i < w; ++i) e[i] = row[c0 + i] - m[c0 + i];
        vecmath::map_contiguous<T, kSoftmaxVecBytes>(e, e, w, vexp);
        for (int64_t i = 0; i < w; ++i) out[c0 + i] = e[i] * s[c0 + i];
      }
    }
  });
}

}  // namespace

void reduce_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl& x = *c.inputs[0].impl();
  const uint64_t mask = reduced_mask(c);
  const OpId op = c.op;
  // Over columns at any column count, logsumexp too: its column sums compute exp on every lane
  // of a 16-column window, so under 16 columns gathered rows would compute fewer ([2^20, 4]:
  // 9.5-12.4 ms in columns, 9.3-9.7 gathered), but the JIT splits logsumexp over columns into
  // an amax and a sum (jit/passes/column_split.h), which a plan recorded at 16 columns or more
  // runs as eager steps at fewer: the same column order gives the same bits.
  const bool cols = op == OpId::Sum || op == OpId::Mean || op == OpId::Prod || op == OpId::Amax ||
                    op == OpId::Amin || op == OpId::Var || op == OpId::Argmax ||
                    op == OpId::Argmin || op == OpId::Logsumexp;
  const int64_t min_cols = cols ? 1 : 0;
  ReducePlan whole = plan_reduction(x, mask, min_cols, /*defer=*/true);
  if (whole.outputs() == 0 && op != OpId::All && op != OpId::Any) return;
  // p: all rows, or a block of gathered rows whose outputs start at output `first`.
  for_row_blocks(whole, itemsize(x.dtype()), [&](const ReducePlan& p, int64_t first) {
    void* const o = out.impl()->data();
    visit_dtype(x.dtype(), [&]<class T>(TypeTag<T>) {
      switch (op) {
        case OpId::Sum:
        case OpId::Prod:
        case OpId::Mean:
          if constexpr (std::is_floating_point_v<T>)
            sum_like<T>(op, p, static_cast<T*>(o) + first, op == OpId::Mean ? c.attrs.ints[1] : 0);
          else if (op != OpId::Mean)
            sum_like<T>(op, p, static_cast<int64_t*>(o) + first);
          break;
        case OpId::Amax:
          extreme<MaxOp, T>(p, static_cast<T*>(o) + first);
          break;
        case OpId::Amin:
          extreme<MinOp, T>(p, static_cast<T*>(o) + first);
          break;
        case OpId::Argmax:
          if constexpr (!std::is_same_v<T, bool>)
            arg_extreme<true, T>(p, static_cast<int64_t*>(o) + first);
          break;
        case OpId::Argmin:
          if constexpr (!std::is_same_v<T, bool>)
            arg_extreme<false, T>(p, static_cast<int64_t*>(o) + first);
          break;
        case OpId::Logsumexp:
          if constexpr (std::is_floating_point_v<T>)
            logsumexp_rows<T, T>(p, static_cast<T*>(o) + first);
          else
            logsumexp_rows<T, float>(p, static_cast<float*>(o) + first);
          break;
        case OpId::Var:
          if constexpr (std::is_floating_point_v<T>)
            var_rows<T>(p, c.attrs.ints[1] != 0, static_cast<T*>(o) + first);
          break;
        case OpId::All:
          all_any<T>(false, p, static_cast<bool*>(o) + first);
          break;
        case OpId::Any:
          all_any<T>(true, p, static_cast<bool*>(o) + first);
          break;
        default:
          fail_not_a_reduction(op);
      }
    });
  });
}

void softmax_rows(const float* x, float* y, int64_t m, int64_t n, bool log) {
  softmax_rows_impl(x, y, m, n, log);
}
void softmax_rows(const double* x, double* y, int64_t m, int64_t n, bool log) {
  softmax_rows_impl(x, y, m, n, log);
}
void softmax_cols(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  softmax_cols_impl(x, y, outer, n, inner, log);
}
void softmax_cols(const double* x, double* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  softmax_cols_impl(x, y, outer, n, inner, log);
}
void layer_norm_rows(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t n,
                     double eps) {
  layer_norm_rows_impl(x, w, b, y, m, n, eps);
}
void layer_norm_rows(const double* x, const double* w, const double* b, double* y, int64_t m,
                     int64_t n, double eps) {
  layer_norm_rows_impl(x, w, b, y, m, n, eps);
}
double cross_entropy_total(const float* x, const int64_t* t, int64_t m, int64_t n, int64_t ignore) {
  return cross_entropy_total_impl(x, t, m, n, ignore);
}
double cross_entropy_total(const double* x, const int64_t* t, int64_t m, int64_t n,
                           int64_t ignore) {
  return cross_entropy_total_impl(x, t, m, n, ignore);
}

}  // namespace kiln::KILN_ISA_NS
