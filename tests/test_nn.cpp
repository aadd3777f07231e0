// nn ops against explicit double-precision formulas written here: softmax / log_softmax,
// layer_norm, cross_entropy, dropout (its keep rule recomputed from Philox), embedding, and the
// composites linear, mse_loss and scaled_dot_product_attention.
// Tolerances (inputs of magnitude <= ~3): Float64 1e-12 absolute (1e-10 for composites that go
// through BLAS); Float32 2e-6 absolute for softmax/log_softmax/cross_entropy/layer_norm (a few
// float32 roundings of O(1) values). linear and mse_loss (a mean of squares) get the classic
// bound of a K-term dot product in any summation order (with or without FMA), per element:
//   |got - ref| <= 2 (K + 1) u * sum_k |x_k w_k|   (+ |bias|),   u = 2^-24 for Float32
// (gamma_K plus one rounding for the bias or the final division, doubled for margin); mse_loss is a
// sum of K = numel non-negative squares, so its bound is relative to the result (docs/testing.md).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core_test_util.h"
#include "expect_error.h"
#include "kiln/kiln.h"

using namespace kiln;
using kiln::testing::expect_error;
using kiln::testutil::values;

namespace {

Tensor make_uniform(const Shape& shape, DType dt, unsigned seed, double lo = -3, double hi = 3) {
  std::mt19937 gen(seed);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& x : v) x = d(gen);
  return from_vector<double>(v, shape).to(dt);
}

void expect_near(const Tensor& got, const std::vector<double>& ref, const Shape& shape, DType dt,
                 double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), shape) << what;
  ASSERT_EQ(got.dtype(), dt) << what;
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), ref.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isinf(ref[i])) {
      ASSERT_EQ(g[i], ref[i]) << what << " at " << i;
    } else {
      ASSERT_NEAR(g[i], ref[i], tol) << what << " at " << i;
    }
  }
}

// Same shape, dtype and exactly equal values (kiln::equal belongs to the reductions).
bool same(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && values(a) == values(b);
}

double tol_for(DType dt) { return dt == kFloat32 ? 2e-6 : 1e-12; }

// (log_)softmax along `dim` of a row-major array of `shape`, in double.
std::vector<double> ref_softmax(const std::vector<double>& x, const Shape& shape, int64_t dim,
                                bool log) {
  int64_t outer = 1, inner = 1, n = shape.empty() ? 1 : shape[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
      double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[at(j)]);
      for (int64_t j = 0; j < n; ++j) s += std::exp(x[at(j)] - mx);
      for (int64_t j = 0; j < n; ++j)
        y[at(j)] = log ? x[at(j)] - mx - std::log(s) : std::exp(x[at(j)] - mx) / s;
    }
  return y;
}

}  // namespace

// ---- softmax / log_softmax ----

TEST(Softmax, EveryDimBothDTypes) {
  unsigned seed = 1;
  for (DType dt : {kFloat32, kFloat64})
    for (const Shape& shape : {Shape{7}, Shape{3, 4, 5}, Shape{2, 1, 6}, Shape{4, 130}})
      for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
        Tensor x = make_uniform(shape, dt, seed++);
        std::vector<double> xv = values(x);
        const std::string what = fmt::format("{} dim {} {}", shape_str(shape), dim, dt);
        expect_near(softmax(x, dim), ref_softmax(xv, shape, dim, false), shape, dt, tol_for(dt),
                    "softmax " + what);
        expect_near(log_softmax(x, dim), ref_softmax(xv, shape, dim, true), shape, dt, tol_for(dt),
                    "log_softmax " + what);
        // Negative dims name the same dim.
        const int64_t neg = dim - static_cast<int64_t>(shape.size());
        EXPECT_TRUE(same(softmax(x, neg), softmax(x, dim))) << what;
        EXPECT_TRUE(same(x.log_softmax(neg), log_softmax(x, dim))) << what;
      }
}

TEST(Softmax, RowsSumToOne) {
  Tensor x = make_uniform({6, 50, 9}, kFloat32, 3);
  for (int64_t dim : {0, 1, 2}) {
    Tensor s = x.softmax(dim);
    // Sum along dim by hand.
    std::vector<double> v = values(s);
    Shape sh = x.sizes();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= sh[d];
    for (int64_t d = dim + 1; d < 3; ++d) inner *= sh[d];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double total = 0;
        for (int64_t j = 0; j < sh[dim]; ++j) total += v[(o * sh[dim] + j) * inner + i];
        ASSERT_NEAR(total, 1.0, 1e-5) << "dim " << dim;
      }
  }
}

TEST(Softmax, NonContiguousInputs) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor base = make_uniform({5, 8}, dt, 7);
    Tensor xt = base.t();                                    // [8, 5], transposed
    Tensor xs = base.slice(1, 1, 8, 3);                      // [5, 3], stepped
    Tensor xe = make_uniform({1, 6}, dt, 8).expand({4, 6});  // broadcast rows
    for (const Tensor& x : {xt, xs, xe})
      for (int64_t dim : {0, 1}) {
        const std::string what = fmt::format("{} dim {}", shape_str(x.sizes()), dim);
        expect_near(softmax(x, dim), ref_softmax(values(x), x.sizes(), dim, false), x.sizes(), dt,
                    tol_for(dt), what);
        expect_near(log_softmax(x, dim), ref_softmax(values(x), x.sizes(), dim, true), x.sizes(),
                    dt, tol_for(dt), what);
      }
  }
}

TEST(Softmax, LargeValuesStableAndParallel) {
  // 1000 and -1000: exp would overflow without subtracting the row max.
  Tensor x = from_vector<float>({1000, 1001, 1002, -1000, -1001, -1002}, {2, 3});
  expect_near(softmax(x, 1), ref_softmax(values(x), {2, 3}, 1, false), {2, 3}, kFloat32, 2e-6,
              "large");
  expect_near(log_softmax(x, 1), ref_softmax(values(x), {2, 3}, 1, true), {2, 3}, kFloat32, 2e-5,
              "large log");  // |values| ~ 1e3: float32 spacing there is 6e-5, x - lse cancels
  // Big enough to split over tasks in both layouts.
  Tensor big = make_uniform({300, 257}, kFloat64, 9);
  for (int64_t dim : {0, 1})
    expect_near(softmax(big, dim), ref_softmax(values(big), {300, 257}, dim, false), {300, 257},
                kFloat64, 1e-12, "big");
}

// log_softmax over the innermost dim is x - (max + log(sum of exps)) with the max and the sum in
// the eager reductions' order, as logsumexp computes them: on finite rows the two give the same
// bits (the in-order scalar sum it used before did not). Each row's first element is its max,
// 0, the others far below it: the sum is 1 plus small terms, its log small, so a sum that
// differs in its last bits shows in log_softmax at the max (0 - lse is exact). Rows shorter and
// longer than a vector, a pairwise block (128) and a row chunk; both dtypes.
TEST(Softmax, LogSoftmaxRowsAreXMinusLogsumexpBitwise) {
  for (DType dt : {kFloat32, kFloat64})
    for (int64_t n : {1, 7, 33, 300, 1000, 4099}) {
      Tensor x = make_uniform({5, n}, dt, 40 + n, -12, -8);
      x.select(1, 0).fill_(0.0);
      const std::string what = std::string(dtype_name(dt)) + " n " + std::to_string(n);
      EXPECT_TRUE(same(log_softmax(x, 1), x - x.logsumexp({1}, true))) << what;
      Tensor out = log_softmax(x, -1);  // and its output never aliases the input
      EXPECT_TRUE(same(x.log_softmax(-1), out)) << what;
    }
}

TEST(Softmax, IntPromotesAndZeroDimAndEmpty) {
  Tensor xi = from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor s = softmax(xi, 1);
  EXPECT_EQ(s.dtype(), kFloat32);
  expect_near(s, ref_softmax({1, 2, 3, 4}, {2, 2}, 1, false), {2, 2}, kFloat32, 2e-6, "int64");
  EXPECT_EQ(log_softmax(xi.to(kInt32), 0).dtype(), kFloat32);
  Tensor z = softmax(scalar_tensor(3.5), 0);
  EXPECT_EQ(z.dim(), 0);
  EXPECT_DOUBLE_EQ(z.item<float>(), 1.0);
  EXPECT_DOUBLE_EQ(log_softmax(scalar_tensor(3.5), -1).item<float>(), 0.0);
  EXPECT_EQ(softmax(zeros({0, 4}), 1).sizes(), (Shape{0, 4}));
  EXPECT_EQ(softmax(zeros({3, 0}), 1).sizes(), (Shape{3, 0}));
}

TEST(Softmax, Errors) {
  expect_error([] { softmax(zeros({2, 3}), 2); }, "softmax");
  expect_error([] { log_softmax(zeros({2, 3}), -3); }, "log_softmax");
}

// ---- layer_norm ----

namespace {
std::vector<double> ref_layer_norm(const std::vector<double>& x, int64_t D,
                                   const std::vector<double>* w, const std::vector<double>* b,
                                   double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r * D < x.size(); ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < D; ++i) mean += x[r * D + i];
    mean /= D;
    for (int64_t i = 0; i < D; ++i) var += (x[r * D + i] - mean) * (x[r * D + i] - mean);
    var /= D;  // biased
    for (int64_t i = 0; i < D; ++i) {
      double v = (x[r * D + i] - mean) / std::sqrt(var + eps);
      if (w) v *= (*w)[i];
      if (b) v += (*b)[i];
      y[r * D + i] = v;
    }
  }
  return y;
}
}  // namespace

TEST(LayerNorm, WithAndWithoutAffine) {
  unsigned seed = 20;
  for (DType dt : {kFloat32, kFloat64})
    for (const Shape& ns : {Shape{6}, Shape{3, 4}}) {
      Shape shape = {5};
      shape.insert(shape.end(), ns.begin(), ns.end());
      Tensor x = make_uniform(shape, dt, seed++);
      Tensor w = make_uniform(ns, dt, seed++), b = make_uniform(ns, dt, seed++);
      std::vector<double> xv = values(x), wv = values(w), bv = values(b);
      int64_t D = 1;
      for (int64_t s : ns) D *= s;
      const double tol = dt == kFloat32 ? 4e-6 : 1e-12;  // outputs up to ~3 * 3 + 3
      const std::string what = fmt::format("ns {} {}", shape_str(ns), dt);
      expect_near(layer_norm(x, ns), ref_layer_norm(xv, D, nullptr, nullptr, 1e-5), shape, dt, tol,
                  "plain " + what);
      expect_near(layer_norm(x, ns, w, b), ref_layer_norm(xv, D, &wv, &bv, 1e-5), shape, dt, tol,
                  "affine " + what);
      expect_near(layer_norm(x, ns, w), ref_layer_norm(xv, D, &wv, nullptr, 1e-5), shape, dt, tol,
                  "weight only " + what);
      expect_near(layer_norm(x, ns, Tensor(), b, 0.5), ref_layer_norm(xv, D, nullptr, &bv, 0.5),
                  shape, dt, tol, "bias only, eps 0.5 " + what);
    }
}

TEST(LayerNorm, NonContiguousAndLarge) {
  Tensor x = make_uniform({8, 5}, kFloat64, 30).t();  // [5, 8] transposed
  expect_near(layer_norm(x, {8}), ref_layer_norm(values(x), 8, nullptr, nullptr, 1e-5), {5, 8},
              kFloat64, 1e-12, "transposed");
  Tensor big = make_uniform({400, 300}, kFloat32, 31);
  expect_near(layer_norm(big, {300}), ref_layer_norm(values(big), 300, nullptr, nullptr, 1e-5),
              {400, 300}, kFloat32, 4e-6, "big");
  // A constant row: variance 0, output 0 (eps keeps it finite).
  Tensor c = full({2, 4}, 7.0);
  for (double v : values(layer_norm(c, {4}))) EXPECT_EQ(v, 0.0);
}

// Rows of nothing ([3, 0] over {0}: the element count divided by D = 0) and no rows: empty
// results, no error.
TEST(LayerNorm, EmptyRowsAndNoRows) {
  const Tensor r = layer_norm(zeros({3, 0}), {0});
  EXPECT_EQ(r.size(0), 3);
  EXPECT_EQ(r.size(1), 0);
  const Tensor n = layer_norm(zeros({0, 5}), {5}, ones({5}), zeros({5}));
  EXPECT_EQ(n.size(0), 0);
  EXPECT_EQ(n.size(1), 5);
}

TEST(LayerNorm, Errors) {
  Tensor x = zeros({2, 3, 4});
  expect_error([&] { layer_norm(x, {3}); }, "layer_norm", "normalized_shape");
  expect_error([&] { layer_norm(x, {2, 3, 4, 5}); }, "layer_norm", "normalized_shape");
  expect_error([&] { layer_norm(x, IntList{}); }, "layer_norm");
  expect_error([&] { layer_norm(x.to(kInt64), {4}); }, "layer_norm", "Int64");
  expect_error([&] { layer_norm(x, {4}, zeros({3})); }, "layer_norm", "weight");
  expect_error([&] { layer_norm(x, {4}, Tensor(), zeros({5})); }, "layer_norm", "bias");
  expect_error([&] { layer_norm(x, {4}, zeros({4}, kFloat64)); }, "layer_norm", "dtype");
}

// ---- cross_entropy ----

namespace {
double ref_cross_entropy(const std::vector<double>& l, int64_t C, const std::vector<int64_t>& t) {
  double total = 0;
  int64_t count = 0;
  for (size_t n = 0; n < t.size(); ++n) {
    if (t[n] == -100) continue;
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < C; ++j) mx = std::max(mx, l[n * C + j]);
    for (int64_t j = 0; j < C; ++j) s += std::exp(l[n * C + j] - mx);
    total += -(l[n * C + t[n]] - mx - std::log(s));
    ++count;
  }
  return total / count;
}
}  // namespace

TEST(CrossEntropy, ValueBatchedUnbatchedIgnored) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor logits = make_uniform({6, 5}, dt, 40);
    std::vector<int64_t> t = {0, 4, 2, 2, 1, 3};
    Tensor r = cross_entropy(logits, from_vector<int64_t>(t, {6}));
    EXPECT_EQ(r.dim(), 0);
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_NEAR(values(r)[0], ref_cross_entropy(values(logits), 5, t), tol_for(dt));
    // Transposed logits.
    Tensor lt = make_uniform({5, 6}, dt, 41).t();
    EXPECT_NEAR(values(cross_entropy(lt, from_vector<int64_t>(t, {6})))[0],
                ref_cross_entropy(values(lt), 5, t), tol_for(dt));
    // Unbatched: [C] with a 0-dim target.
    Tensor l1 = make_uniform({5}, dt, 42);
    EXPECT_NEAR(values(cross_entropy(l1, scalar_tensor(3, kInt64)))[0],
                ref_cross_entropy(values(l1), 5, {3}), tol_for(dt));
    // PyTorch's default ignore_index = -100 leaves rows out of the mean.
    std::vector<int64_t> ti = {0, -100, 2, -100, 1, 3};
    EXPECT_NEAR(values(cross_entropy(logits, from_vector<int64_t>(ti, {6})))[0],
                ref_cross_entropy(values(logits), 5, ti), tol_for(dt));
  }
  // Known value: uniform logits over C classes give log(C).
  EXPECT_NEAR(cross_entropy(zeros({3, 4}), from_vector<int64_t>({0, 1, 3}, {3})).item<float>(),
              std::log(4.0), 1e-6);
  // Every row ignored: 0/0.
  EXPECT_TRUE(std::isnan(
      cross_entropy(zeros({2, 4}), from_vector<int64_t>({-100, -100}, {2})).item<float>()));
}

TEST(CrossEntropy, Errors) {
  Tensor l = zeros({3, 4});
  expect_error(
      [&] {
        cross_entropy(l, from_vector<int64_t>({0, 4, 1}, {3}));
      },
      "cross_entropy", "target 4");
  expect_error(
      [&] {
        cross_entropy(l, from_vector<int64_t>({0, -1, 1}, {3}));
      },
      "cross_entropy", "target -1");
  expect_error(
      [&] {
        cross_entropy(l, from_vector<int32_t>({0, 1, 1}, {3}));
      },
      "cross_entropy", "Int64");
  expect_error([&] { cross_entropy(l, zeros({3})); }, "cross_entropy", "Int64");
  expect_error(
      [&] {
        cross_entropy(l.to(kInt64), from_vector<int64_t>({0, 1, 1}, {3}));
      },
      "cross_entropy", "Float32");
  expect_error([&] { cross_entropy(l, from_vector<int64_t>({0, 1}, {2})); }, "cross_entropy");
  expect_error([&] { cross_entropy(zeros({4}), from_vector<int64_t>({0}, {1})); }, "cross_entropy",
               "0-dim");
  expect_error(
      [&] {
        cross_entropy(zeros({2, 3, 4}), from_vector<int64_t>({0, 1}, {2}));
      },
      "cross_entropy");
}

// ---- dropout ----

TEST(Dropout, KeepRuleIsPhilox) {
  for (DType dt : {kFloat32, kFloat64}) {
    const double p = 0.3;
    Tensor x =
        make_uniform({7, 9}, dt, 50).t();  // non-contiguous: the rule is over row-major order
    std::vector<double> xv = values(x);
    manual_seed(1234);
    const uint64_t seed = current_seed();
    const uint64_t offset = reserve_philox_offsets(0);  // the next counter dropout will take
    Tensor y = dropout(x, p, true);
    EXPECT_EQ(reserve_philox_offsets(0), offset + 63) << "dropout reserves numel counters";
    std::vector<double> yv = values(y);
    ASSERT_EQ(yv.size(), 63u);
    for (size_t i = 0; i < yv.size(); ++i) {
      auto r = Philox::draw(seed, offset + i);
      double u = dt == kFloat32 ? Philox::uniform_float(r[0]) : Philox::uniform_double(r[0], r[1]);
      double expect = 0;
      if (u >= p) {
        if (dt == kFloat32)
          expect = static_cast<float>(xv[i]) * static_cast<float>(1.0 / (1.0 - p));
        else
          expect = xv[i] * (1.0 / (1.0 - p));
      }
      ASSERT_EQ(yv[i], expect) << "element " << i << " " << dtype_name(dt);
    }
  }
}

TEST(Dropout, ReproducibleAndMeanPreserved) {
  Tensor x = ones({200, 500});
  manual_seed(7);
  Tensor a = dropout(x, 0.25, true);
  Tensor b = dropout(x, 0.25, true);
  manual_seed(7);
  Tensor c = dropout(x, 0.25, true);
  EXPECT_TRUE(same(a, c));
  EXPECT_FALSE(same(a, b));  // the second call draws fresh counters
  std::vector<float> v = a.to_vector<float>();
  double total = 0, kept = 0;
  for (float f : v) {
    total += f;
    kept += f != 0;
    ASSERT_TRUE(f == 0.0f || std::abs(f - 1.0f / 0.75f) < 1e-6f);
  }
  // 1e5 Bernoulli(0.75) draws: the kept fraction's standard deviation is 0.0014; allow 5 sigma.
  EXPECT_NEAR(kept / v.size(), 0.75, 0.007);
  EXPECT_NEAR(total / v.size(), 1.0, 0.01);
}

TEST(Dropout, IdentityZerosAndErrors) {
  Tensor x = make_uniform({3, 4}, kFloat32, 60);
  Tensor same = dropout(x, 0.5, false);
  EXPECT_TRUE(same.is_same_storage(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same_storage(x));
  for (double v : values(dropout(x, 1.0, true))) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(dropout(zeros({0, 3}), 0.5, true).sizes(), (Shape{0, 3}));
  expect_error([&] { dropout(x, 1.5, true); }, "dropout", "1.5");
  expect_error([&] { dropout(x, -0.1, false); }, "dropout", "between 0 and 1");
  expect_error([&] { dropout(x.to(kInt64), 0.5, true); }, "dropout", "Int64");
}

// ---- embedding ----

TEST(Embedding, PicksRows) {
  for (DType dt : {kFloat32, kFloat64, kInt64}) {
    Tensor w = make_uniform({5, 3}, kFloat64, 70).to(dt);
    std::vector<double> wv = values(w);
    std::vector<int64_t> idx = {4, 0, 2, 2, 1, 4};
    for (DType it : {kInt64, kInt32}) {
      Tensor i = from_vector<int64_t>(idx, {2, 3}).to(it);
      Tensor e = embedding(w, i);
      std::vector<double> ref;
      for (int64_t k : idx)
        for (int64_t d = 0; d < 3; ++d) ref.push_back(wv[k * 3 + d]);
      expect_near(e, ref, {2, 3, 3}, dt, 0, fmt::format("{} {}", dt, it));
      // Transposed indices and a transposed weight.
      Tensor it2 = i.t();
      Tensor e2 = embedding(w.t().contiguous().t(), it2);
      std::vector<double> ref2;
      std::vector<double> iv = values(it2);
      for (double k : iv)
        for (int64_t d = 0; d < 3; ++d) ref2.push_back(wv[static_cast<int64_t>(k) * 3 + d]);
      expect_near(e2, ref2, {3, 2, 3}, dt, 0, "transposed");
    }
  }
  EXPECT_EQ(embedding(zeros({4, 2}), scalar_tensor(1, kInt64)).sizes(), (Shape{2}));
  EXPECT_EQ(embedding(zeros({4, 2}), zeros({0}, kInt64)).sizes(), (Shape{0, 2}));
}

TEST(Embedding, Errors) {
  Tensor w = zeros({5, 3});
  expect_error([&] { embedding(w, from_vector<int64_t>({1, 5}, {2})); }, "embedding", "index 5");
  expect_error([&] { embedding(w, from_vector<int32_t>({-1}, {1})); }, "embedding", "V = 5");
  expect_error([&] { embedding(w, zeros({2})); }, "embedding", "Int64");
  expect_error([&] { embedding(zeros({5}), from_vector<int64_t>({1}, {1})); }, "embedding", "2-D");
}

// ---- composites ----

TEST(Linear, MatchesFormula) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = make_uniform({2, 3, 4}, dt, 80), w = make_uniform({5, 4}, dt, 81),
           b = make_uniform({5}, dt, 82);
    std::vector<double> xv = values(x), wv = values(w), bv = values(b);
    std::vector<double> ref(30), refb(30), mag(30);
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t o = 0; o < 5; ++o) {
        double s = 0, m = 0;
        for (int64_t k = 0; k < 4; ++k) {
          s += xv[r * 4 + k] * wv[o * 4 + k];
          m += std::abs(xv[r * 4 + k] * wv[o * 4 + k]);
        }
        ref[r * 5 + o] = s;
        refb[r * 5 + o] = s + bv[o];
        mag[r * 5 + o] = m + std::abs(bv[o]);
      }
    const double u = dt == kFloat32 ? 0x1p-24 : 0x1p-53, K = 4;
    const std::vector<double> got = values(linear(x, w)), gotb = values(linear(x, w, b));
    ASSERT_EQ(got.size(), 30u);
    ASSERT_EQ(gotb.size(), 30u);
    for (size_t i = 0; i < 30; ++i) {
      EXPECT_NEAR(got[i], ref[i], 2 * (K + 1) * u * mag[i])
          << dtype_name(dt) << " no bias at " << i;
      EXPECT_NEAR(gotb[i], refb[i], 2 * (K + 1) * u * mag[i]) << dtype_name(dt) << " bias at " << i;
    }
    EXPECT_EQ(linear(x, w, b).sizes(), (Shape{2, 3, 5}));
  }
  expect_error([] { linear(zeros({2, 3}), zeros({2, 3, 4})); }, "linear");
}

TEST(MseLoss, MatchesFormula) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor a = make_uniform({4, 5}, dt, 90),
           b = make_uniform({5}, dt, 91);  // b broadcasts over rows
    std::vector<double> av = values(a), bv = values(b);
    double s = 0;
    for (int64_t i = 0; i < 20; ++i) s += (av[i] - bv[i % 5]) * (av[i] - bv[i % 5]);
    Tensor r = mse_loss(a, b);
    EXPECT_EQ(r.dim(), 0);
    EXPECT_EQ(r.dtype(), dt);
    // K = 20 non-negative terms, each a rounded difference squared (2 roundings), then the sum
    // and the division: relative error <= (K + 3) u, doubled.
    const double u = dt == kFloat32 ? 0x1p-24 : 0x1p-53, K = 20;
    EXPECT_NEAR(values(r)[0], s / 20, 2 * (K + 3) * u * s / 20);
    Tensor at = make_uniform({5, 4}, dt, 92).t();
    std::vector<double> atv = values(at);
    double s2 = 0;
    for (int64_t i = 0; i < 20; ++i) s2 += (atv[i] - av[i]) * (atv[i] - av[i]);
    EXPECT_NEAR(values(mse_loss(at, a))[0], s2 / 20, 2 * (K + 3) * u * s2 / 20);
  }
  EXPECT_TRUE(std::isnan(mse_loss(zeros({0}), zeros({0})).item<float>()));
  expect_error([] { mse_loss(zeros({2}), zeros({2}, kFloat64)); }, "mse_loss");
  expect_error([] { mse_loss(zeros({2}, kInt64), zeros({2}, kInt64)); }, "mse_loss");
}

namespace {
// softmax(q k^T / sqrt(E) + mask) v for one batch: q [L, E], k [S, E], v [S, Ev].
std::vector<double> ref_attention(const double* q, const double* k, const double* v, int64_t L,
                                  int64_t S, int64_t E, int64_t Ev, bool causal) {
  std::vector<double> out(L * Ev, 0.0);
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> sc(S);
    double mx = -INFINITY;
    for (int64_t j = 0; j < S; ++j) {
      double s = 0;
      for (int64_t e = 0; e < E; ++e) s += q[i * E + e] * k[j * E + e];
      sc[j] = (causal && j > i) ? -INFINITY : s / std::sqrt(double(E));
      mx = std::max(mx, sc[j]);
    }
    double z = 0;
    for (int64_t j = 0; j < S; ++j) z += std::exp(sc[j] - mx);
    for (int64_t j = 0; j < S; ++j)
      for (int64_t e = 0; e < Ev; ++e) out[i * Ev + e] += std::exp(sc[j] - mx) / z * v[j * Ev + e];
  }
  return out;
}
}  // namespace

TEST(Attention, MatchesFormulaCausalAndNot) {
  struct Case {
    int64_t B, L, S, E, Ev;
  };
  unsigned seed = 100;
  for (DType dt : {kFloat32, kFloat64})
    for (Case c : {Case{2, 4, 4, 8, 8}, Case{3, 3, 5, 4, 6}, Case{1, 6, 2, 3, 2}})
      for (bool causal : {false, true}) {
        Tensor q = make_uniform({c.B, c.L, c.E}, dt, seed++, -1, 1);
        Tensor k = make_uniform({c.B, c.S, c.E}, dt, seed++, -1, 1);
        Tensor v = make_uniform({c.B, c.S, c.Ev}, dt, seed++, -1, 1);
        std::vector<double> qv = values(q), kv = values(k), vv = values(v), ref;
        for (int64_t b = 0; b < c.B; ++b) {
          auto r = ref_attention(qv.data() + b * c.L * c.E, kv.data() + b * c.S * c.E,
                                 vv.data() + b * c.S * c.Ev, c.L, c.S, c.E, c.Ev, causal);
          ref.insert(ref.end(), r.begin(), r.end());
        }
        const double tol = dt == kFloat32 ? 1e-5 * std::max(c.E, c.S) : 1e-10;
        expect_near(scaled_dot_product_attention(q, k, v, causal), ref, {c.B, c.L, c.Ev}, dt, tol,
                    fmt::format("B{} L{} S{} E{} causal {} {}", c.B, c.L, c.S, c.E, causal, dt));
      }
  // Causal with L = S: row 0 attends only to key 0, so it equals v[0].
  Tensor v = make_uniform({3, 2}, kFloat64, 7);
  Tensor y = scaled_dot_product_attention(make_uniform({3, 4}, kFloat64, 8),
                                          make_uniform({3, 4}, kFloat64, 9), v, true);
  EXPECT_NEAR(values(y)[0], values(v)[0], 1e-15);
  EXPECT_NEAR(values(y)[1], values(v)[1], 1e-15);
}

TEST(Attention, Errors) {
  const std::string op = "scaled_dot_product_attention";
  expect_error(
      [] {
        scaled_dot_product_attention(zeros({2, 3}), zeros({2, 4}), zeros({2, 3}));
      },
      op, "embedding size");
  expect_error(
      [] {
        scaled_dot_product_attention(zeros({2, 3}), zeros({2, 3}), zeros({5, 3}));
      },
      op, "sequence length");
  expect_error([] { scaled_dot_product_attention(zeros({3}), zeros({3}), zeros({3})); }, op);
  expect_error(
      [] {
        scaled_dot_product_attention(zeros({2, 3}), zeros({2, 3}, kFloat64), zeros({2, 3}));
      },
      op, "dtype");
}
