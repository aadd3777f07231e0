// Reductions against a scalar reference written here: every op over contiguous, transposed,
// sliced and expanded inputs, keepdim on and off, several dims lists, every dtype, empty and
// 0-dim tensors, inputs large enough for the parallel paths, and every error path.
//
// Tolerances (docs/testing.md, "Reductions"): results are compared with the double-precision
// reference as
//   |got - ref| <= tol * (scale + 1)
// with tol = 1e-5 for Float32 and 1e-12 for Float64, and a scale derived from the op:
//   sum:       S = sum of |x| over the reduced elements (any summation order errs by at most
//              n * eps * S; pairwise stays far below it);
//   mean:      S / n (the sum's bound, divided by n like the sum itself);
//   var:       var + (S / n)^2 (two passes: the mean's error d enters the sum of squared deviations
//              only as n * d^2, so the error is relative to var itself, not to the squares);
//   logsumexp: |result| + max |x| (the shifted exponentials are <= 1, their sum errs relatively);
//   prod:      n * |product|.
// Integer results and amax/amin/argmax/argmin are exact. A var that drops Bessel's correction
// errs by var / n, far above tol * var for the n here and in LargeVarMatchesFloat64Reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "expect_error.h"
#include "op_matrix.h"
#include "ops/cpu/reduce_plan.h"
#include "ops/functions.h"
#include "runtime/config.h"
#include "runtime/error.h"

using namespace kiln;
using kiln::testing::expect_error;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

enum class R { Sum, Mean, Prod, Amax, Amin, Lse, Var, VarBiased, Argmax, Argmin };

// Reference: groups the row-major values by kept index and reduces each group in double.
std::vector<double> reference(const std::vector<double>& v, const std::vector<int64_t>& sizes,
                              std::vector<int64_t> dims, R r, std::vector<double>* scale) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  std::vector<bool> red(nd, dims.empty());
  for (int64_t d : dims) red[d < 0 ? d + nd : d] = true;
  int64_t outputs = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[d]) outputs *= sizes[d];
  std::vector<std::vector<double>> groups(outputs);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0, mul = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      int64_t idx = rem % sizes[d];
      rem /= sizes[d];
      if (!red[d]) {
        o += idx * mul;
        mul *= sizes[d];
      }
    }
    groups[o].push_back(v[i]);
  }
  std::vector<double> out;
  if (scale) scale->clear();
  for (const auto& g : groups) {
    double s = 0, p = 1, a = 0, mx = 0;
    for (double x : g) {
      s += x;
      p *= x;
      a += std::abs(x);
      mx = std::max(mx, std::abs(x));
    }
    const double n = static_cast<double>(g.size());
    double res = 0;
    switch (r) {
      case R::Sum:
        res = s;
        break;
      case R::Mean:
        res = s / n;
        a /= std::max(n, 1.0);
        break;
      case R::Prod:
        res = p;
        break;
      case R::Amax:
      case R::Amin:
      case R::Argmax:
      case R::Argmin: {
        size_t best = 0;
        for (size_t i = 1; i < g.size(); ++i) {
          if (std::isnan(g[best])) break;
          bool better = std::isnan(g[i]) ||
                        (r == R::Amax || r == R::Argmax ? g[i] > g[best] : g[i] < g[best]);
          if (better) best = i;
        }
        res = (r == R::Argmax || r == R::Argmin) ? double(best) : g[best];
        break;
      }
      case R::Lse: {
        double m = -kInf;
        for (double x : g) m = std::max(m, x);
        double e = 0;
        for (double x : g) e += std::exp(x - m);
        res = g.empty() ? -kInf : m + std::log(e);
        a = std::abs(res) + mx;
        break;
      }
      case R::Var:
      case R::VarBiased: {
        double mu = s / n, q = 0;
        for (double x : g) q += (x - mu) * (x - mu);
        res = q / (n - (r == R::Var ? 1 : 0));
        const double mean_abs = a / std::max(n, 1.0);
        a = std::abs(res) + mean_abs * mean_abs;
        break;
      }
    }
    if (r == R::Prod) a = std::abs(p) * n;  // each multiply rounds by at most eps relative
    out.push_back(res);
    if (scale) scale->push_back(a);
  }
  return out;
}

// Values of any dtype as doubles, in row-major order of the (possibly strided) tensor.
std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  switch (t.dtype()) {
    case DType::Bool:
      for (bool b : t.to_vector<bool>()) out.push_back(b);
      break;
    case DType::Int32:
      for (auto x : t.to_vector<int32_t>()) out.push_back(x);
      break;
    case DType::Int64:
      for (auto x : t.to_vector<int64_t>()) out.push_back(double(x));
      break;
    case DType::Float32:
      for (auto x : t.to_vector<float>()) out.push_back(x);
      break;
    case DType::Float64:
      out = t.to_vector<double>();
      break;
  }
  return out;
}

// A tensor of `shape` with values drawn for the op: small ints, or floats in [lo, hi).
Tensor make_random(std::vector<int64_t> shape, DType dt, std::mt19937& rng, double lo, double hi) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = is_floating(dt) ? u(rng) : std::floor(u(rng));
  Tensor d = from_vector<double>(v, shape);
  return d.to(dt);
}

// The four layouts of a logical [4, 5, 6] input.
std::vector<std::pair<std::string, Tensor>> layouts(DType dt, std::mt19937& rng, double lo,
                                                    double hi) {
  return {
      {"contiguous", make_random({4, 5, 6}, dt, rng, lo, hi)},
      {"transposed", make_random({6, 5, 4}, dt, rng, lo, hi).permute({2, 1, 0})},
      {"sliced", make_random({8, 5, 12}, dt, rng, lo, hi).slice(0, 0, 8, 2).slice(2, 1, 12, 2)},
      {"expanded", make_random({4, 1, 6}, dt, rng, lo, hi).expand({4, 5, 6})},
  };
}

std::vector<int64_t> out_shape(const std::vector<int64_t>& sizes, std::vector<int64_t> dims,
                               bool keepdim) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  std::vector<bool> red(nd, dims.empty());
  for (int64_t d : dims) red[d < 0 ? d + nd : d] = true;
  std::vector<int64_t> out;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[d])
      out.push_back(sizes[d]);
    else if (keepdim)
      out.push_back(1);
  return out;
}

void expect_matches(const Tensor& got, const std::vector<double>& ref,
                    const std::vector<double>& scale, DType in, bool exact,
                    const std::string& what) {
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), ref.size()) << what;
  const double tol =
      exact ? 0 : (got.dtype() == DType::Float64 && in == DType::Float64 ? 1e-12 : 1e-5);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
    } else if (std::isinf(ref[i])) {
      EXPECT_EQ(g[i], ref[i]) << what << " at " << i;
    } else {
      EXPECT_LE(std::abs(g[i] - ref[i]), tol * ((scale.empty() ? 0 : scale[i]) + 1))
          << what << " at " << i << ": got " << g[i] << " want " << ref[i];
    }
  }
}

const std::vector<std::vector<int64_t>> kDimsLists = {{},     {0},     {1},    {2},      {-1},
                                                      {0, 2}, {-1, 0}, {1, 2}, {0, 1, 2}};
const DType kAll[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64};

using DimsFn = Tensor (*)(const Tensor&, IntList, bool);

struct Case {
  const char* name;
  DimsFn fn;
  R r;
  double lo, hi;  // input range (prod: near 1 so products stay finite and exact for ints)
};

Tensor var_unbiased(const Tensor& x, IntList d, bool k) { return var(x, d, true, k); }
Tensor var_biased(const Tensor& x, IntList d, bool k) { return var(x, d, false, k); }
Tensor sum_fn(const Tensor& x, IntList d, bool k) { return sum(x, d, k); }
Tensor mean_fn(const Tensor& x, IntList d, bool k) { return mean(x, d, k); }
Tensor prod_fn(const Tensor& x, IntList d, bool k) { return prod(x, d, k); }
Tensor amax_fn(const Tensor& x, IntList d, bool k) { return amax(x, d, k); }
Tensor amin_fn(const Tensor& x, IntList d, bool k) { return amin(x, d, k); }
Tensor lse_fn(const Tensor& x, IntList d, bool k) { return logsumexp(x, d, k); }

DType expected_dtype(R r, DType in) {
  switch (r) {
    case R::Sum:
    case R::Prod:
      return is_floating(in) ? in : DType::Int64;
    case R::Lse:
      return is_floating(in) ? in : DType::Float32;
    case R::Argmax:
    case R::Argmin:
      return DType::Int64;
    default:
      return in;
  }
}

bool supports(R r, DType dt) {
  if (r == R::Mean || r == R::Var || r == R::VarBiased) return is_floating(dt);
  return true;
}

class ReduceDims : public ::testing::TestWithParam<Case> {};

TEST_P(ReduceDims, MatchesReferenceOnEveryLayoutDtypeAndDims) {
  const Case& c = GetParam();
  std::mt19937 rng(7);
  for (DType dt : kAll) {
    if (!supports(c.r, dt)) continue;
    for (auto& [layout, x] : layouts(dt, rng, c.lo, c.hi)) {
      const std::vector<double> v = values(x);
      for (const auto& dims : kDimsLists) {
        for (bool keepdim : {false, true}) {
          std::string what = fmt::format("{} {} {} dims {} {}", c.name, dt, layout, shape_str(dims),
                                         keepdim ? "keepdim" : "");
          Tensor got =
              kiln::testing::run_in_all_modes(what, [&] { return c.fn(x, dims, keepdim); });
          EXPECT_EQ(got.dtype(), expected_dtype(c.r, dt)) << what;
          EXPECT_EQ(got.sizes(), out_shape(x.sizes(), dims, keepdim)) << what;
          std::vector<double> scale;
          auto ref = reference(v, x.sizes(), dims, c.r, &scale);
          bool exact = !is_floating(got.dtype()) || c.r == R::Amax || c.r == R::Amin;
          expect_matches(got, ref, scale, dt, exact, what);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceDims,
                         ::testing::Values(Case{"sum", sum_fn, R::Sum, -3, 4},
                                           Case{"mean", mean_fn, R::Mean, -3, 4},
                                           Case{"prod", prod_fn, R::Prod, 0.7, 2.2},
                                           Case{"amax", amax_fn, R::Amax, -3, 4},
                                           Case{"amin", amin_fn, R::Amin, -3, 4},
                                           Case{"logsumexp", lse_fn, R::Lse, -3, 4},
                                           Case{"var", var_unbiased, R::Var, -3, 4},
                                           Case{"var_biased", var_biased, R::VarBiased, -3, 4}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Reduce, ArgmaxArgminEveryLayoutDtypeDim) {
  std::mt19937 rng(11);
  for (DType dt : {DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    for (auto& [layout, x] : layouts(dt, rng, -2, 3)) {  // small ints: many ties
      const std::vector<double> v = values(x);
      for (int64_t d : {0, 1, 2, -1, -3}) {
        for (bool keepdim : {false, true}) {
          for (R r : {R::Argmax, R::Argmin}) {
            std::string what = fmt::format("{} {} dim {}", layout, dt, d);
            Tensor got = kiln::testing::run_in_all_modes(what, [&] {
              return r == R::Argmax ? argmax(x, d, keepdim) : argmin(x, d, keepdim);
            });
            EXPECT_EQ(got.dtype(), DType::Int64);
            EXPECT_EQ(got.sizes(), out_shape(x.sizes(), {d}, keepdim)) << what;
            expect_matches(got, reference(v, x.sizes(), {d}, r, nullptr), {}, dt, true, what);
          }
        }
      }
    }
  }
}

// 4-D inputs: reduced dims forming one block before a kept inner dim of >= 16 take the column
// kernel directly; other patterns and layouts are gathered first.
// A reduction of a dense transposed input reads it as columns in memory order (ops/cpu/
// reduce_plan.cpp): bitwise the column reduction of the untransposed tensor. One that is not dense
// (sliced) gathers its rows first; where the last kept dim is contiguous in memory it gathers
// 32 x 32 tiles through a buffer: bitwise the reduction of the same rows made contiguous, around
// the tile edges (sizes 32, 45, 77, 100), with a batch dim, for 4- and 8-byte elements.
TEST(Reduce, TransposedInputsReduceAsColumnsOrGatherInTilesBitwise) {
  std::mt19937 rng(77);
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64}) {
    for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{77, 45}, {32, 32}, {100, 33}}) {
      const std::string what = fmt::format("{} [{}, {}]", dtype_name(dt), r, c);
      const Tensor x = make_random({3, r, c}, dt, rng, -3, 4);
      const Tensor t = x.permute({0, 2, 1});  // [3, c, r]: the kept c has stride 1
      EXPECT_TRUE(equal(sum(t, {-1}), sum(x, {1}))) << what;
      EXPECT_TRUE(equal(amax(t.select(0, 1), {-1}), amax(x.select(0, 1), {0}))) << what;
      const Tensor xs = make_random({3, r, c + 5}, dt, rng, -3, 4).narrow(2, 0, c);
      const Tensor ts = xs.permute({0, 2, 1});  // not dense: gathered rows
      EXPECT_TRUE(equal(sum(ts, {-1}), sum(ts.contiguous(), {-1}))) << what;
      EXPECT_TRUE(equal(amax(ts.select(0, 1), {-1}), amax(ts.select(0, 1).contiguous(), {-1})))
          << what;
      if (dt == DType::Int64) {  // kept dims out of their order in memory: gathered (exact sums)
        const Tensor q = x.permute({2, 1, 0});  // [c, r, 3] over r: kept c and 3 run the other way
        EXPECT_TRUE(equal(sum(q, {1}), sum(q.contiguous(), {1}))) << what;
      }
      if (dt == DType::Float32 && r == 77) {  // the two orders differ: the test tells them apart
        EXPECT_FALSE(equal(sum(t, {-1}), sum(t.contiguous(), {-1}))) << what;
      }
    }
  }
}

// Large gathered reductions (batch-norm statistics: [N, C, H, W] over {0, 2, 3}) gather and
// reduce per block of rows (ops/cpu/reduce_plan.h for_row_blocks): bitwise the reduction of
// the same rows laid out in place ([C, N * H * W] over its last dim, no gather). [2, 45, 110,
// 110]: 4.4 MB of Float32 (two rows a block, the last block one row), 8.7 MB of Float64 and
// Int64 (one row a block); [2, 45, 30, 30] gathers whole.
TEST(Reduce, LargeGatheredRowsReducePerBlockBitwise) {
  std::mt19937 rng(91);
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64}) {
    for (int64_t hw : {110, 30}) {
      const std::string what = fmt::format("{} [2, 45, {}, {}]", dtype_name(dt), hw, hw);
      const Tensor x = make_random({2, 45, hw, hw}, dt, rng, -3, 4);
      const Tensor rows = x.permute({1, 0, 2, 3}).contiguous().view({45, -1});
      const int64_t before = row_block_reductions();
      EXPECT_TRUE(equal(x.sum({0, 2, 3}), rows.sum({1}))) << what;
      EXPECT_TRUE(equal(x.amax({0, 2, 3}), rows.amax({1}))) << what;
      EXPECT_TRUE(equal(x.amin({0, 2, 3}, true).view({45}), rows.amin({1}))) << what;
      if (dt != DType::Int64) {
        EXPECT_TRUE(equal(x.mean({0, 2, 3}), rows.mean({1}))) << what;
        EXPECT_TRUE(equal(x.var({0, 2, 3}), rows.var({1}))) << what;
        EXPECT_TRUE(equal(x.var({0, 2, 3}, false), rows.var({1}, false))) << what;
        EXPECT_TRUE(equal(x.logsumexp({0, 2, 3}), rows.logsumexp({1}))) << what;
        const Tensor near1 = x * 1e-4 + 1.0;
        EXPECT_TRUE(equal(near1.prod({0, 2, 3}),
                          near1.permute({1, 0, 2, 3}).contiguous().view({45, -1}).prod({1})))
            << what;
      }
      // Counted where eager reduces them (under KILN_JIT=1 the JIT plans these reductions).
      const int64_t blocked = row_block_reductions() - before;
      const int64_t bytes = 2 * hw * hw * static_cast<int64_t>(itemsize(dt)) * 45;
      if (!config().jit) {
        EXPECT_EQ(blocked, bytes >= int64_t{config().gather_block_min_kib} * 1024
                               ? (dt == DType::Int64 ? 3 : 8)
                               : 0)
            << what;
      }
    }
  }
}

TEST(Reduce, FourDimPatterns) {
  std::mt19937 rng(19);
  Tensor base = make_random({3, 4, 5, 16}, DType::Float64, rng, -3, 4);
  const std::vector<std::vector<int64_t>> dims_lists = {{1, 2}, {0, 1}, {0, 2},
                                                        {1, 3}, {-2},   {0, 1, 2}};
  for (const Tensor& x : {base, base.permute({0, 2, 1, 3}), base.slice(3, 0, 16, 2)}) {
    const std::vector<double> v = values(x);
    for (const auto& dims : dims_lists) {
      for (R r : {R::Sum, R::Amax, R::Prod, R::Var}) {
        std::vector<double> scale;
        auto ref = reference(v, x.sizes(), dims, r, &scale);
        Tensor got = r == R::Sum    ? sum(x, dims, true)
                     : r == R::Amax ? amax(x, dims)
                     : r == R::Prod ? prod(x, dims)
                                    : var(x, dims);
        expect_matches(got, ref, scale, DType::Float64, r == R::Amax,
                       fmt::format("4-D {} dims {}", int(r), shape_str(dims)));
      }
    }
  }
}

TEST(Reduce, AllDimsFormsAndMethods) {
  Tensor x = from_vector<float>({1, -2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(sum(x).item<float>(), 17.f);
  EXPECT_EQ(x.sum().sizes(), std::vector<int64_t>{});
  EXPECT_EQ(x.sum({1}, true).to_vector<float>(), (std::vector<float>{2, 15}));
  EXPECT_FLOAT_EQ(x.mean().item<float>(), 17.f / 6);
  EXPECT_EQ(x.mean({0}).to_vector<float>(), (std::vector<float>{2.5f, 1.5f, 4.5f}));
  EXPECT_EQ(x.prod().item<float>(), -720.f);
  EXPECT_EQ(x.prod({0}).to_vector<float>(), (std::vector<float>{4, -10, 18}));
  EXPECT_EQ(x.amax().item<float>(), 6.f);
  EXPECT_EQ(x.amin({1}).to_vector<float>(), (std::vector<float>{-2, 4}));
  EXPECT_EQ(x.amax({0}).to_vector<float>(), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(amin(x).item<float>(), -2.f);
  EXPECT_EQ(x.argmax(1).to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(x.argmin(0, true).sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(logsumexp(x).item<float>(), x.logsumexp({0, 1}).item<float>());  // API.md's form
  EXPECT_NEAR(x.logsumexp({0, 1}).item<float>(), 6.44473f,
              1e-4);  // 6 + log(1 + e^-1 + e^-2 + e^-3 + e^-5 + e^-8)
  EXPECT_NEAR(x.var({1}).to_vector<float>()[0], 19.0f / 3, 1e-5);  // mean 2/3: (1/9+64/9+49/9)/2
  EXPECT_NEAR(x.std({1}, false).to_vector<float>()[1], std::sqrt(2.0f / 3), 1e-6);
  EXPECT_TRUE(x.all().item<bool>());
  EXPECT_TRUE(x.any().item<bool>());
}

TEST(Reduce, ResultDtypes) {
  Tensor b = from_vector<bool>({true, false, true}, {3});
  EXPECT_EQ(sum(b).dtype(), DType::Int64);
  EXPECT_EQ(sum(b).item<int64_t>(), 2);
  EXPECT_EQ(prod(b).dtype(), DType::Int64);
  EXPECT_EQ(prod(b).item<int64_t>(), 0);
  EXPECT_EQ(amax(b).dtype(), DType::Bool);
  EXPECT_TRUE(amax(b).item<bool>());
  EXPECT_FALSE(amin(b).item<bool>());
  EXPECT_EQ(logsumexp(b, {0}).dtype(), DType::Float32);
  Tensor i = from_vector<int32_t>({1 << 30, 1 << 30, 1 << 30}, {3});
  EXPECT_EQ(sum(i).dtype(), DType::Int64);
  EXPECT_EQ(sum(i).item<int64_t>(), 3ll << 30);  // accumulated in Int64: no Int32 overflow
  EXPECT_EQ(amax(i).dtype(), DType::Int32);
  // Int64 sums wrap on overflow (two's complement, as PyTorch).
  Tensor big = from_vector<int64_t>({std::numeric_limits<int64_t>::max(), 1}, {2});
  EXPECT_EQ(sum(big).item<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(prod(from_vector<int32_t>({-3, 5, -7}, {3})).item<int64_t>(), 105);
  EXPECT_EQ(logsumexp(i, {0}).dtype(), DType::Float32);
  Tensor f = from_vector<double>({1, 2}, {2});
  EXPECT_EQ(sum(f).dtype(), DType::Float64);
  EXPECT_EQ(var(f, {}).dtype(), DType::Float64);
  EXPECT_EQ(argmax(f, 0).dtype(), DType::Int64);
  for (DType dt : kAll) {
    Tensor z = zeros({2, 2}, TensorOptions().dtype(dt));
    EXPECT_EQ(all(z).dtype(), DType::Bool);
    EXPECT_FALSE(all(z).item<bool>());
    EXPECT_FALSE(any(z).item<bool>());
    Tensor o = ones({2, 2}, TensorOptions().dtype(dt));
    EXPECT_TRUE(all(o).item<bool>());
    EXPECT_TRUE(any(o).item<bool>());
  }
}

TEST(Reduce, AllAnyMixedAndStrided) {
  Tensor x = from_vector<int64_t>({0, 1, 2, 0, 3, 4}, {2, 3});
  EXPECT_FALSE(all(x).item<bool>());
  EXPECT_TRUE(all(x.slice(1, 1, 3)).item<bool>());
  EXPECT_FALSE(any(x.slice(1, 0, 1)).item<bool>());
  EXPECT_TRUE(any(x.t()).item<bool>());
  Tensor nan = from_vector<float>({NAN, 1}, {2});
  EXPECT_TRUE(all(nan).item<bool>());  // NaN is nonzero
  EXPECT_TRUE(any(from_vector<float>({0, NAN}, {2})).item<bool>());
}

TEST(Reduce, NaNPropagatesAndArgFindsFirstNaN) {
  Tensor x = from_vector<float>({1, NAN, 5, NAN, -1}, {5});
  EXPECT_TRUE(std::isnan(amax(x).item<float>()));
  EXPECT_TRUE(std::isnan(amin(x).item<float>()));
  EXPECT_EQ(argmax(x, 0).item<int64_t>(), 1);
  EXPECT_EQ(argmin(x, 0).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(sum(x).item<float>()));
  EXPECT_TRUE(std::isnan(logsumexp(x, {0}).item<float>()));
  // First occurrence of ties.
  Tensor t = from_vector<int64_t>({3, 1, 3, 1}, {4});
  EXPECT_EQ(argmax(t, 0).item<int64_t>(), 0);
  EXPECT_EQ(argmin(t, 0).item<int64_t>(), 1);
}

// Long rows take the vector path of amax/amin (and argmax's first pass): NaN anywhere still wins.
TEST(Reduce, NaNInLongRows) {
  for (int64_t pos : {0, 37, 500, 997}) {
    std::vector<double> v(999);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i));
    v[10] = INFINITY;
    v[20] = -INFINITY;
    Tensor clean = from_vector<double>(v, {999});
    EXPECT_EQ(amax(clean).item<double>(), INFINITY);
    EXPECT_EQ(amin(clean.to(DType::Float32)).item<float>(), -INFINITY);
    EXPECT_EQ(argmax(clean, 0).item<int64_t>(), 10);
    v[pos] = NAN;
    v[pos + 1] = NAN;
    for (DType dt : {DType::Float32, DType::Float64}) {
      Tensor x = from_vector<double>(v, {999}).to(dt);
      EXPECT_TRUE(std::isnan(values(amax(x))[0])) << pos;
      EXPECT_TRUE(std::isnan(values(amin(x))[0])) << pos;
      EXPECT_EQ(argmax(x, 0).item<int64_t>(), pos);
      EXPECT_EQ(argmin(x, 0).item<int64_t>(), pos);
      EXPECT_TRUE(std::isnan(values(logsumexp(x, {0}))[0]));
    }
  }
}

TEST(Reduce, LogsumexpInfinities) {
  Tensor x = from_vector<double>({-INFINITY, -INFINITY, 1000, 1000, INFINITY, 0}, {3, 2});
  auto r = logsumexp(x, {1}).to_vector<double>();
  EXPECT_EQ(r[0], -INFINITY);
  EXPECT_NEAR(r[1], 1000 + std::log(2.0), 1e-12);  // stable: no overflow of exp(1000)
  EXPECT_EQ(r[2], INFINITY);
}

TEST(Reduce, EmptyTensors) {
  Tensor e = zeros({0, 3});
  EXPECT_EQ(sum(e).item<float>(), 0.f);
  EXPECT_EQ(sum(e, {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(sum(e, {1}).sizes(), std::vector<int64_t>{0});
  EXPECT_EQ(prod(e, {0}).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(prod(zeros({0}, TensorOptions().dtype(DType::Int32))).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(mean(e).item<float>()));
  EXPECT_TRUE(std::isnan(var(e, {0}).to_vector<float>()[2]));
  EXPECT_EQ(logsumexp(e, {0}).to_vector<float>()[0], -INFINITY);
  EXPECT_EQ(amax(e, {1}).sizes(), std::vector<int64_t>{0});  // reduced dim 1 is not empty
  EXPECT_EQ(argmax(e, 1).sizes(), std::vector<int64_t>{0});
  EXPECT_TRUE(all(e).item<bool>());
  EXPECT_FALSE(any(e).item<bool>());
  EXPECT_EQ(sum(e, {0}, true).sizes(), (std::vector<int64_t>{1, 3}));
}

TEST(Reduce, ZeroDimInputs) {
  Tensor s = scalar_tensor(2.5);
  for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {0}, {-1}}) {
    for (bool keepdim : {false, true}) {
      EXPECT_EQ(sum(s, dims, keepdim).sizes(), std::vector<int64_t>{});
      EXPECT_EQ(sum(s, dims, keepdim).item<float>(), 2.5f);
      EXPECT_EQ(mean(s, dims, keepdim).item<float>(), 2.5f);
      EXPECT_EQ(prod(s, dims, keepdim).item<float>(), 2.5f);
      EXPECT_EQ(amax(s, dims, keepdim).item<float>(), 2.5f);
      EXPECT_EQ(amin(s, dims, keepdim).item<float>(), 2.5f);
      EXPECT_FLOAT_EQ(logsumexp(s, dims, keepdim).item<float>(), 2.5f);
      EXPECT_TRUE(std::isnan(var(s, dims, true, keepdim).item<float>()));  // N - 1 = 0
      EXPECT_EQ(var(s, dims, false, keepdim).item<float>(), 0.f);
    }
  }
  EXPECT_EQ(argmax(s, 0).item<int64_t>(), 0);
  EXPECT_EQ(argmin(s, -1, true).sizes(), std::vector<int64_t>{});
  EXPECT_TRUE(all(s).item<bool>());
  EXPECT_EQ(sum(scalar_tensor(true)).item<int64_t>(), 1);
}

TEST(Reduce, VarSingleElementAndStd) {
  Tensor x = from_vector<double>({4, 7, 1, 9}, {2, 2});
  auto v = var(x, {1}).to_vector<double>();  // unbiased, N = 2
  EXPECT_DOUBLE_EQ(v[0], 4.5);
  EXPECT_DOUBLE_EQ(v[1], 32.0);
  auto sd = kiln::std(x, {1}, true, true);
  EXPECT_EQ(sd.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_DOUBLE_EQ(sd.to_vector<double>()[1], std::sqrt(32.0));
  Tensor one = from_vector<float>({3}, {1});
  EXPECT_TRUE(std::isnan(var(one, {0}).item<float>()));
  EXPECT_EQ(var(one, {0}, false).item<float>(), 0.f);
  // Two-pass: a large offset does not destroy the variance (one-pass E[x^2]-E[x]^2 would).
  Tensor off = from_vector<float>({1e4f + 1, 1e4f + 2, 1e4f + 3}, {3});
  EXPECT_NEAR(var(off, {0}).item<float>(), 1.0f, 1e-3);
}

// Column path: a contiguous kept inner dim (>= 16) with a long reduced dim before it.
TEST(Reduce, ColumnAndRowPathsLarge) {
  std::mt19937 rng(3);
  for (DType dt : {DType::Float32, DType::Float64, DType::Int32}) {
    Tensor x = make_random({2, 1500, 110}, dt, rng, -3, 4);  // 3.3e5 elements: parallel
    const std::vector<double> v = values(x);
    for (auto dims : std::vector<std::vector<int64_t>>{{1}, {0, 1}, {2}, {0, 2}, {}}) {
      std::vector<double> scale;
      auto ref = reference(v, x.sizes(), dims, R::Sum, &scale);
      expect_matches(sum(x, dims), ref, scale, dt, !is_floating(dt), "sum large");
      auto ref_max = reference(v, x.sizes(), dims, R::Amax, nullptr);
      expect_matches(amax(x, dims), ref_max, ref_max, dt, true, "amax large");
    }
    Tensor rows = make_random({320, 1024}, dt, rng, -3, 4);
    std::vector<double> scale;
    auto ref = reference(values(rows), rows.sizes(), {-1}, R::Sum, &scale);
    expect_matches(sum(rows, {-1}), ref, scale, dt, !is_floating(dt), "row sums");
  }
  // Columns longer than one row chunk (2048): partial vectors combined across chunks.
  for (DType dt : {DType::Float32, DType::Int64}) {
    Tensor c = make_random({5000, 40}, dt, rng, -3, 4);
    std::vector<double> cs;
    auto cref = reference(values(c), c.sizes(), {0}, R::Sum, &cs);
    expect_matches(sum(c, {0}), cref, cs, dt, !is_floating(dt), "chunked column sums");
    auto cmin = reference(values(c), c.sizes(), {0}, R::Amin, nullptr);
    expect_matches(amin(c, {0}), cmin, {}, dt, true, "chunked column amin");
  }
  Tensor y = make_random({700, 500}, DType::Float32, rng, -3, 4);
  std::vector<double> scale;
  auto ref = reference(values(y.t()), {500, 700}, {1}, R::Var, &scale);
  expect_matches(var(y.t(), {1}), ref, scale, DType::Float32, false, "var transposed large");
  ref = reference(values(y), {700, 500}, {0}, R::Lse, &scale);
  expect_matches(logsumexp(y, {0}), ref, scale, DType::Float32, false, "lse large");
}

// argmax / argmin over a dim followed by kept dims scan the columns in place (run_arg_cols,
// ops/cpu/reduce_loops.h): narrow and wide (past one 4096-column slice; a single block split
// into slices for the threads: [300, 700] on two or more) kept blocks, columns longer
// than one 2048-row chunk (the chunks' parts combined: a tie must keep the earlier chunk's row),
// several outer blocks, small ints (ties everywhere), and for floats NaNs (the first one wins),
// -inf, and +0 / -0 ties, in both JIT modes. Exact: compared with the scalar reference's index.
TEST(Reduce, ArgmaxArgminOverColumns) {
  std::mt19937 rng(23);
  struct Shape {
    std::vector<int64_t> sizes;
    int64_t dim;
  };
  const std::vector<Shape> shapes = {
      {{37, 3}, 0},      {{50, 16}, 0},  {{4100, 7}, 0}, {{2, 5000, 21}, 1}, {{4500, 600}, 0},
      {{3, 9, 4, 5}, 1}, {{2049, 2}, 0}, {{1, 40}, 0},   {{130, 4200}, 0},   {{300, 700}, 0}};
  for (DType dt : {DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    for (const Shape& sh : shapes) {
      int64_t n = 1;
      for (int64_t v : sh.sizes) n *= v;
      std::uniform_int_distribution<int> small(-3, 3), pick(0, 99);
      std::vector<double> v(static_cast<size_t>(n));
      for (double& e : v) {
        e = small(rng);
        if (is_floating(dt)) {
          const int k = pick(rng);
          e = k == 0 ? kNaN : k == 1 ? -kInf : k == 2 ? -0.0 : k == 3 ? 0.0 : e;
        }
      }
      // The largest value planted in the last chunk of some columns and in the first of
      // others, twice each, so that chunk order decides the index.
      const int64_t cols = sh.sizes.back();
      if (sh.sizes.size() == 2 && sh.sizes[0] > 2048)
        for (int64_t j = 0; j < cols; j += 2) {
          v[static_cast<size_t>(10 * cols + j)] = 9;
          v[static_cast<size_t>((sh.sizes[0] - 5) * cols + j)] = 9;
        }
      const Tensor x = from_vector<double>(v, sh.sizes).to(dt);
      const std::vector<double> xv = values(x);
      for (R r : {R::Argmax, R::Argmin}) {
        const std::string what =
            fmt::format("{} {} [{}] dim {}", r == R::Argmax ? "argmax" : "argmin", dt,
                        fmt::join(sh.sizes, ", "), sh.dim);
        const Tensor got = kiln::testing::run_in_all_modes(what, [&] {
          return r == R::Argmax ? argmax(x, sh.dim, false) : argmin(x, sh.dim, true);
        });
        expect_matches(got, reference(xv, x.sizes(), {sh.dim}, r, nullptr), {}, dt, true, what);
      }
    }
  }
}

// logsumexp over columns (the column plan since 2026-11-29: the maxima, then the sums of
// exp(x - max), in place): a column of -inf gives -inf, one holding +inf gives +inf, a NaN gives
// NaN, and the others match log(sum(exp)) in double; Int32 input computes in Float32.
TEST(Reduce, LogsumexpOverColumnsSpecialValues) {
  const int64_t n = 70, w = 20;  // 70 rows: a 64-row run and a short one, 16-column windows
  std::vector<double> v(static_cast<size_t>(n * w));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < w; ++j) v[static_cast<size_t>(i * w + j)] = std::sin(double(i * 7 + j));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * w)] = -kInf;  // column 0
  v[static_cast<size_t>(5 * w + 1)] = kInf;                               // column 1
  v[static_cast<size_t>(9 * w + 2)] = kNaN;                               // column 2
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = from_vector<double>(v, {n, w}).to(dt);
    const std::string what = fmt::format("logsumexp cols {}", dt);
    const std::vector<double> got =
        values(kiln::testing::run_in_all_modes(what, [&] { return logsumexp(x, {0}); }));
    ASSERT_EQ(got.size(), static_cast<size_t>(w));
    EXPECT_EQ(got[0], -kInf) << what;
    EXPECT_EQ(got[1], kInf) << what;
    EXPECT_TRUE(std::isnan(got[2])) << what;
    for (int64_t j = 3; j < w; ++j) {
      double e = 0;
      for (int64_t i = 0; i < n; ++i) e += std::exp(v[static_cast<size_t>(i * w + j)]);
      EXPECT_NEAR(got[static_cast<size_t>(j)], std::log(e), dt == DType::Float32 ? 1e-5 : 1e-12)
          << what << " column " << j;
    }
  }
  std::vector<double> iv(static_cast<size_t>(n * w));
  for (size_t k = 0; k < iv.size(); ++k) iv[k] = double(int64_t(k * 37 % 11) - 5);
  const Tensor xi = from_vector<double>(iv, {n, w}).to(DType::Int32);
  const Tensor li = logsumexp(xi, {0});
  EXPECT_EQ(li.dtype(), DType::Float32);
  std::vector<double> scale;
  expect_matches(li, reference(iv, {n, w}, {0}, R::Lse, &scale), scale, DType::Int32, false,
                 "logsumexp cols int32");
}

// var and std on reductions of n > 500 elements (rows, columns, all dims; Float32 and Float64)
// against the double reference, with var's bound (var + (S/n)^2) * tol: dropping Bessel's
// correction (n instead of n - 1) moves the result by var / n >= var / 5000 = 2e-4 var, more than
// ten times the Float32 bound, so it cannot pass. mean is checked on the same inputs.
TEST(Reduce, LargeVarMatchesFloat64Reference) {
  std::mt19937 rng(29);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (Shape shape : {Shape{3, 601}, Shape{1024, 4}, Shape{5000}}) {
      Tensor x = make_random(shape, dt, rng, -3, 4);
      const std::vector<double> v = values(x);
      for (auto dims : std::vector<std::vector<int64_t>>{{-1}, {0}, {}}) {
        const std::string what =
            fmt::format("{} {} dims {}", dt, shape_str(shape), shape_str(dims));
        std::vector<double> scale;
        auto ref = reference(v, x.sizes(), dims, R::Var, &scale);
        expect_matches(var(x, dims), ref, scale, dt, false, "var " + what);
        std::vector<double> sd = ref, sd_scale = scale;
        for (size_t i = 0; i < sd.size(); ++i) {
          sd[i] = std::sqrt(ref[i]);
          sd_scale[i] = scale[i] / std::max(sd[i], 1e-3);  // d sqrt(v) = dv / (2 sqrt(v))
        }
        expect_matches(kiln::std(x, dims), sd, sd_scale, dt, false, "std " + what);
        ref = reference(v, x.sizes(), dims, R::VarBiased, &scale);
        expect_matches(var(x, dims, false), ref, scale, dt, false, "biased var " + what);
        ref = reference(v, x.sizes(), dims, R::Mean, &scale);
        expect_matches(mean(x, dims), ref, scale, dt, false, "mean " + what);
      }
    }
  }
}

// Rows longer than one chunk: argmax ties across chunk boundaries keep the first occurrence.
TEST(Reduce, ArgmaxAcrossChunks) {
  std::vector<float> v(2 * 200000, 0.f);
  v[150000] = 5;  // row 0: first max in chunk 2
  v[190000] = 5;
  v[200000 + 70000] = -3;  // row 1: min in chunk 1, tie later
  v[200000 + 199999] = -3;
  Tensor x = from_vector<float>(v, {2, 200000});
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{150000, 0}));
  EXPECT_EQ(argmin(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 70000}));
  EXPECT_EQ(argmax(x.t(), 0).to_vector<int64_t>(), (std::vector<int64_t>{150000, 0}));
}

// A 1e7-element Float32 sum in float accumulators stays within 2e-6 relative of the double sum
// (a naive float loop is off by ~1e-3 here); results are bitwise equal for any thread count.
TEST(Reduce, LargeFloatSumAccurateAndDeterministic) {
  const int64_t n = 10'000'000;
  std::vector<float> v(n);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  double ref = 0;
  for (auto& x : v) {
    x = u(rng);
    ref += x;
  }
  Tensor t = from_vector<float>(v, {n});
  const float got = sum(t).item<float>();
  EXPECT_NEAR(got, ref, 2e-6 * ref);
  EXPECT_NEAR(mean(t).item<float>(), ref / n, 2e-6 * ref / n);
  const int saved = config().num_threads;
  std::vector<float> results;
  for (int threads : {0, 3, 2, 1}) {
    set_num_threads(threads);
    float s = sum(t).item<float>();
    results.push_back(s);
    EXPECT_EQ(std::memcmp(&s, &got, sizeof s), 0) << threads << " threads";
    Tensor rows = sum(t.view({1000, 10000}), {0});
    EXPECT_EQ(rows.numel(), 10000);
  }
  set_num_threads(saved);
}

TEST(Reduce, Errors) {
  Tensor x = zeros({2, 3});
  Tensor i = zeros({2, 3}, TensorOptions().dtype(DType::Int64));
  Tensor e = zeros({0, 3});
  expect_error([&] { sum(x, {0, -2}); }, "sum: dim 0 appears more than once");
  expect_error([&] { mean(x, {2}); }, "mean: dim 2 is out of range");
  expect_error([&] { prod(x, {-3}); }, "prod: dim -3 is out of range");
  expect_error([&] { mean(i); }, "mean: expected a floating point input, got [2, 3] Int64");
  expect_error([&] { var(i, {0}); }, "var: expected a floating point input");
  expect_error([&] { kiln::std(i, {0}); }, "std: expected a floating point input");
  expect_error([&] { mean(zeros({2}, TensorOptions().dtype(DType::Bool))); }, "mean:");
  expect_error([&] { amax(e); }, "amax: reduced dim 0 of [0, 3] Float32 has size 0");
  expect_error([&] { amin(e, {0}); }, "expected a non-empty reduction");
  expect_error([&] { argmax(e, 0); }, "argmax: reduced dim 0");
  expect_error([&] { argmin(e, -2); }, "argmin: reduced dim 0");
  expect_error([&] { argmax(x, 2); }, "argmax: dim 2 is out of range");
  expect_error([&] { argmin(zeros({2}, TensorOptions().dtype(DType::Bool)), 0); },
               "argmin: not supported for Bool");
  expect_error([&] { logsumexp(x, {1, 1}); }, "logsumexp: dim 1 appears more than once");
  expect_error([&] { sum(scalar_tensor(1.0), {1}); }, "sum: dim 1 is out of range");
  expect_error([&] { amax(Tensor()); }, "undefined");
}

}  // namespace
