// The reduction kernels compiled for baseline x86-64, AVX2 and AVX-512 give identical bits (they
// keep one accumulation order; -ffp-contract=off), for every op on row, column and gathered
// layouts; and column sums, maxima and variances, narrow and wide, follow the documented order
// bitwise on every ISA (ops/cpu/reduce_loops.h col_block: 16-column windows, leaves folded side by
// side).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "isa_util.h"
#include "kiln/kiln.h"
#include "ops/reduce_isa.h"

using namespace kiln;

namespace {

TEST(ReduceIsa, KernelsGiveIdenticalBitsOnEveryIsa) {
  // Baseline against every ISA up to the active one (a CPU with AVX2 only, or KILN_CPU_ISA=avx2,
  // still checks AVX2 against baseline; tests/isa_util.h).
  const int isas = kiln::testing::isas_to_compare("ReduceIsa.KernelsGiveIdenticalBitsOnEveryIsa");
  if (isas < 2) GTEST_SKIP() << "only the baseline ISA here: nothing to compare with";
  const bool has_avx512 = isas == 3;
  manual_seed(3);
  Tensor base = randn({333, 517});
  struct Case {
    OpId op;
    Tensor x;
    DimVector dims;
  };
  std::vector<Case> cases;
  for (const Tensor& x : {base, base.t(), base.slice(1, 0, 517, 3), base.to(kFloat64)}) {
    for (OpId op : {OpId::Sum, OpId::Mean, OpId::Prod, OpId::Amax, OpId::Amin, OpId::Logsumexp,
                    OpId::Var, OpId::Argmax})
      for (DimVector dims : {DimVector{1}, DimVector{0}}) cases.push_back({op, x, dims});
    cases.push_back({OpId::Sum, x, DimVector{}});
  }
  // Fewer than 16 columns (16-column windows reading into the next rows, scalar at the end).
  for (const Tensor& x : {randn({4100, 7}), randn({255, 2}), randn({2049, 15})})
    for (OpId op :
         {OpId::Sum, OpId::Mean, OpId::Prod, OpId::Amax, OpId::Amin, OpId::Argmax, OpId::Argmin})
      cases.push_back({op, x, DimVector{0}});
  int checked = 0;
  for (const Case& c : cases) {
    Attrs a;
    a.dims = c.dims;
    a.ints[1] = 1;  // Var: unbiased
    const Tensor in[] = {c.x};
    Tensor ref = dispatch(c.op, in, a);  // the active ISA, for the output's shape and dtype
    OpCall call{c.op, in, a};
    Tensor outs[3] = {empty_like(ref), empty_like(ref), empty_like(ref)};
    isa_baseline::reduce_eager(call, outs[0]);
    isa_avx2::reduce_eager(call, outs[1]);
    if (has_avx512) isa_avx512::reduce_eager(call, outs[2]);
    size_t bytes = ref.numel() * itemsize(ref.dtype());
    for (int k = 1; k < (has_avx512 ? 3 : 2); ++k)
      EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), outs[k].raw_data(), bytes))
          << op_name(c.op) << " isa " << k;
    EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), ref.raw_data(), bytes)) << op_name(c.op);
    ++checked;
  }
  EXPECT_EQ(checked, 89);
}

// eager's column order (ops/cpu/reduce_loops.h), transcribed: chunks of 2048 rows, each halved at
// floor(len / 2) down to runs of at most 64 rows folded in order from the identity; the chunks
// combined pairwise (earlier on the left), neighbours first.
template <class T, class Op>
T documented_column(const T* x, int64_t n, int64_t w, int64_t j, T identity, Op op) {
  auto run = [&](auto& self, int64_t start, int64_t len) -> T {
    if (len <= 64) {
      T acc = identity;
      for (int64_t i = 0; i < len; ++i) acc = op(acc, x[(start + i) * w + j]);
      return acc;
    }
    const int64_t half = len / 2;
    const T a = self(self, start, half);
    return op(a, self(self, start + half, len - half));
  };
  std::vector<T> part;
  for (int64_t c = 0; c < n; c += 2048) part.push_back(run(run, c, std::min<int64_t>(2048, n - c)));
  const size_t chunks = part.size();
  for (size_t s = 1; s < chunks; s *= 2)
    for (size_t c = 0; c + s < chunks; c += 2 * s) part[c] = op(part[c], part[c + s]);
  return part[0];
}

template <class T>
void expect_documented_columns(int isas, int64_t n, int64_t w, bool with_nan) {
  manual_seed(static_cast<uint64_t>(n * 31 + w));
  Tensor x = randn({n, w}, TensorOptions().dtype(std::is_same_v<T, float> ? kFloat32 : kFloat64));
  std::vector<T> v = x.to_vector<T>();
  if (with_nan) v[static_cast<size_t>(n * w / 2)] = std::numeric_limits<T>::quiet_NaN();
  x = from_vector<T>(v, {n, w});
  const T inf = std::numeric_limits<T>::infinity();
  auto sum = [](T a, T b) { return a + b; };
  auto max = [](T a, T b) { return (a > b || a != a) ? a : b; };
  for (OpId op : {OpId::Sum, OpId::Amax, OpId::Var}) {
    Attrs a;
    a.dims = {0};
    a.ints[1] = 1;  // Var: unbiased
    const Tensor in[] = {x};
    const Tensor ref = dispatch(op, in, a);
    OpCall call{op, in, a};
    std::vector<Tensor> outs = {ref};
    for (int k = 0; k < isas; ++k) outs.push_back(empty_like(ref));
    isa_baseline::reduce_eager(call, outs[1]);
    if (isas > 1) isa_avx2::reduce_eager(call, outs[2]);
    if (isas > 2) isa_avx512::reduce_eager(call, outs[3]);
    std::vector<T> wants(static_cast<size_t>(w));
    for (int64_t j = 0; j < w; ++j)
      wants[j] = op == OpId::Amax ? documented_column<T>(v.data(), n, w, j, -inf, max)
                                  : documented_column<T>(v.data(), n, w, j, T(0), sum);
    if (op == OpId::Var) {  // the means, then the centered squares in the same order
      std::vector<T> sq(v.size());
      for (size_t e = 0; e < v.size(); ++e) {
        const T mu = wants[e % static_cast<size_t>(w)] / static_cast<T>(n);
        sq[e] = (v[e] - mu) * (v[e] - mu);
      }
      for (int64_t j = 0; j < w; ++j)
        wants[j] = documented_column<T>(sq.data(), n, w, j, T(0), sum) / static_cast<T>(n - 1);
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::vector<T> got = outs[k].to_vector<T>();
      for (int64_t j = 0; j < w; ++j) {
        const T want = wants[static_cast<size_t>(j)];
        EXPECT_EQ(0, std::memcmp(&want, &got[static_cast<size_t>(j)], sizeof(T)))
            << op_name(op) << " [" << n << ", " << w << "] column " << j << " output " << k
            << " (0: dispatched, then baseline, avx2, avx512): " << got[static_cast<size_t>(j)]
            << " against " << want;
      }
    }
  }
}

// softmax / log_softmax along a dim that is not innermost (softmax_cols, per ISA since
// 2026-11-29: it was baseline-only): the same bits on every ISA, Float32 and Float64, 130
// columns (a partial vector), NaN and -inf columns; and each column sums to 1 (the op's meaning).
TEST(ReduceIsa, SoftmaxOverColumnsGivesIdenticalBitsOnEveryIsa) {
  const int isas = kiln::testing::isas_to_compare("ReduceIsa.SoftmaxOverColumns");
  if (isas < 2) GTEST_SKIP() << "only the baseline ISA here: nothing to compare with";
  const int64_t outer = 3, n = 70, inner = 130;
  manual_seed(5);
  Tensor xf = (randn({outer, n, inner}) * 4.0).contiguous();
  float* pf = xf.mutable_data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) pf[i * inner + 7] = NAN, pf[i * inner + 9] = -INFINITY;
  const Tensor xd = xf.to(kFloat64);
  for (bool log : {false, true}) {
    std::vector<float> f[3];
    std::vector<double> d[3];
    for (int k = 0; k < isas; ++k) {
      f[k].assign(static_cast<size_t>(outer * n * inner), 0.0f);
      d[k].assign(f[k].size(), 0.0);
    }
    isa_baseline::softmax_cols(xf.data_ptr<float>(), f[0].data(), outer, n, inner, log);
    isa_baseline::softmax_cols(xd.data_ptr<double>(), d[0].data(), outer, n, inner, log);
    isa_avx2::softmax_cols(xf.data_ptr<float>(), f[1].data(), outer, n, inner, log);
    isa_avx2::softmax_cols(xd.data_ptr<double>(), d[1].data(), outer, n, inner, log);
    if (isas == 3) {
      isa_avx512::softmax_cols(xf.data_ptr<float>(), f[2].data(), outer, n, inner, log);
      isa_avx512::softmax_cols(xd.data_ptr<double>(), d[2].data(), outer, n, inner, log);
    }
    for (int k = 1; k < isas; ++k) {
      EXPECT_EQ(std::memcmp(f[k].data(), f[0].data(), f[0].size() * 4), 0) << k << " " << log;
      EXPECT_EQ(std::memcmp(d[k].data(), d[0].data(), d[0].size() * 8), 0) << k << " " << log;
    }
    if (!log) {
      for (int64_t c : {0, 64, 129}) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += d[0][static_cast<size_t>((2 * n + i) * inner + c)];
        EXPECT_NEAR(s, 1.0, 1e-12) << c;
      }
      EXPECT_TRUE(std::isnan(f[0][7]));
    }
  }
}

TEST(ReduceIsa, ColumnsFollowTheDocumentedOrder) {
  // Rows around the 64-row runs, the two- and four-run folds (128, 256) and the 2048-row
  // chunks; columns narrow (windows into the next rows; the last rows scalar; 16- and 32-byte
  // windows up to 8 floats or 4 doubles, exact at 4 and 8), 16 and wider.
  const int isas = kiln::testing::isas_to_compare("ReduceIsa.ColumnsFollowTheDocumentedOrder");
  for (int64_t n : {1, 2, 63, 64, 65, 128, 129, 130, 200, 256, 257, 2047, 2049, 5000})
    for (int64_t w : {2, 3, 4, 7, 8, 15, 16, 17, 40}) {
      expect_documented_columns<float>(isas, n, w, false);
      expect_documented_columns<double>(isas, n, w, n > 100 && w == 7);
    }
  expect_documented_columns<float>(isas, 300, 5, true);
}

// softmax / log_softmax over columns (since 2026-11-30): the columns' maxima and their sums of
// exp(x - max) in the documented column order, then exp(x - max) * (1 / sum), or x - (max +
// log(sum)), with the exp and log ops' bits. Rows past one 2048-row chunk, wide and narrow
// columns, Float32 and Float64, 1 and 2 threads.
template <class T>
void expect_documented_softmax_columns(int64_t n, int64_t w) {
  const DType dt = std::is_same_v<T, float> ? kFloat32 : kFloat64;
  manual_seed(static_cast<uint64_t>(n + w));
  const Tensor x = randn({n, w}, TensorOptions().dtype(dt)) * 3.0;
  const std::vector<T> v = x.to_vector<T>();
  const T inf = std::numeric_limits<T>::infinity();
  auto sum = [](T a, T b) { return a + b; };
  auto max = [](T a, T b) { return (a > b || a != a) ? a : b; };
  std::vector<T> mx(static_cast<size_t>(w)), shifted(v.size());
  for (int64_t j = 0; j < w; ++j) mx[j] = documented_column<T>(v.data(), n, w, j, -inf, max);
  for (size_t e = 0; e < v.size(); ++e) shifted[e] = v[e] - mx[e % static_cast<size_t>(w)];
  const std::vector<T> ex = exp(from_vector<T>(shifted, {n, w})).template to_vector<T>();
  std::vector<T> s(static_cast<size_t>(w));
  for (int64_t j = 0; j < w; ++j) s[j] = documented_column<T>(ex.data(), n, w, j, T(0), sum);
  const std::vector<T> logs = log(from_vector<T>(s, {w})).template to_vector<T>();
  const std::vector<T> y = softmax(x, 0).template to_vector<T>();
  const std::vector<T> ly = log_softmax(x, 0).template to_vector<T>();
  for (size_t e = 0; e < v.size(); ++e) {
    const size_t j = e % static_cast<size_t>(w);
    const T want = ex[e] * (T(1) / s[j]), lwant = v[e] - (mx[j] + logs[j]);
    ASSERT_EQ(0, std::memcmp(&want, &y[e], sizeof(T)))
        << "softmax [" << n << ", " << w << "] element " << e << ": " << y[e] << " against "
        << want;
    ASSERT_EQ(0, std::memcmp(&lwant, &ly[e], sizeof(T)))
        << "log_softmax [" << n << ", " << w << "] element " << e << ": " << ly[e] << " against "
        << lwant;
  }
}

TEST(ReduceIsa, SoftmaxOverColumnsFollowsTheDocumentedOrder) {
  const int saved = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (auto [n, w] : {std::pair<int64_t, int64_t>{70, 20}, {300, 130}, {2100, 515}}) {
      expect_documented_softmax_columns<float>(n, w);
      expect_documented_softmax_columns<double>(n, w);
    }
  }
  set_num_threads(saved);
}

// Slices of 32 columns and more walk each 64-row run in memory order, the accumulators in
// memory (col_leaf_rows); slices narrow to give every thread a part, and rows wider than 4096
// columns take several. The same documented order on every ISA, 1 and 2 threads.
TEST(ReduceIsa, WideColumnsFollowTheDocumentedOrder) {
  const int isas = kiln::testing::isas_to_compare("ReduceIsa.WideColumnsFollowTheDocumentedOrder");
  const int saved = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (int64_t n : {1, 63, 65, 200, 2049})
      for (int64_t w : {32, 47, 128, 131, 515, 1024}) {
        expect_documented_columns<float>(isas, n, w, n == 65 && w == 131);
        expect_documented_columns<double>(isas, n, w, false);
      }
    expect_documented_columns<float>(isas, 130, 4100, true);
    expect_documented_columns<double>(isas, 70, 8200, false);
  }
  set_num_threads(saved);
}

}  // namespace
