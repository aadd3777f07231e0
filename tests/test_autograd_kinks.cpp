// Gradients at and around the points where a function is not smooth, and the leaves the other
// gradient tests do not build (docs/testing.md, "Gradients"):
//  - relu, abs, clamp (both bounds), maximum/minimum (no ties), where and masked_fill are checked
//    by finite differences on inputs that lie on BOTH sides of every kink, each input at least
//    kMargin = 0.05 from it (>> the finite-difference step h = 1e-6, so the central difference
//    never straddles a kink);
//  - the step functions floor, ceil, round and sign have a gradient that is exactly zero, asserted
//    bit for bit (and a composite x + step(x) must give exactly the incoming gradient);
//  - 0-dim and empty leaves, and leaves of mixed Float32/Float64 in one graph;
//  - Float32 gradients against the Float64 ones of the same (Float32-exact) inputs, with the bound
//    written in kF32GradBound below.
#include <cmath>
#include <cstring>
#include <random>

#include "gradcheck.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

constexpr double kMargin = 0.05;

// A Float64 leaf of `shape` with values in [lo, hi) that keep kMargin away from every kink, and
// with at least one value on each side of every kink inside (lo, hi) (the draw is redone with the
// next seed until that holds). Values are rounded to Float32 so the same leaf can be cast.
Tensor kink_leaf(Shape shape, double lo, double hi, std::vector<double> kinks, uint32_t seed = 3) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  for (uint32_t attempt = 0;; ++attempt) {
    std::mt19937 rng(seed + 7919 * attempt);
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v;
    while (static_cast<int64_t>(v.size()) < n) {
      const double x = static_cast<float>(dist(rng));
      bool near = false;
      for (double k : kinks) near = near || std::abs(x - k) < kMargin;
      if (!near) v.push_back(x);
    }
    bool both_sides = true;
    for (double k : kinks) {
      if (k <= lo + kMargin || k >= hi - kMargin) continue;  // no room on one side
      bool below = false, above = false;
      for (double x : v) (x < k ? below : above) = true;
      both_sides = both_sides && below && above;
    }
    if (both_sides || n < 2) return from_vector<double>(v, shape).requires_grad_();
  }
}

// Every kink of floor/ceil (integers) and round (integers and halves) in [-3, 3].
std::vector<double> step_kinks() {
  std::vector<double> k;
  for (int i = -6; i <= 6; ++i) k.push_back(i / 2.0);
  return k;
}

using Unary = Tensor (*)(const Tensor&);
Tensor clamp_both(const Tensor& x) { return clamp(x, -0.5, 0.5); }
Tensor clamp_high(const Tensor& x) { return clamp(x, -4.0, 0.25); }
Tensor clamp_low(const Tensor& x) { return clamp(x, -0.25, 4.0); }

struct KinkCase {
  const char* name;
  Unary fn;
  std::vector<double> kinks;
};

const KinkCase kKinkCases[] = {
    {"relu", kiln::relu, {0.0}},        {"abs", kiln::abs, {0.0}},
    {"clamp", clamp_both, {-0.5, 0.5}}, {"clamp_high", clamp_high, {0.25}},
    {"clamp_low", clamp_low, {-0.25}},
};

TEST(AutogradKinks, BothSidesOfEveryKink) {
  for (const KinkCase& c : kKinkCases) {
    SCOPED_TRACE(c.name);
    auto f = [&](const std::vector<Tensor>& x) { return c.fn(x[0]); };
    expect_gradcheck(f, {kink_leaf({4, 5}, -1, 1, c.kinks)});
    // A non-contiguous leaf (a transpose) takes the strided kernels.
    Tensor base = kink_leaf({5, 3}, -1, 1, c.kinks, 11).detach();
    expect_gradcheck(f, {base.t().requires_grad_()});
  }
}

// The gradient below and above the kink is exactly 0 or the incoming gradient (no arithmetic on
// the way): checked bit for bit, with the side taken from the input itself.
TEST(AutogradKinks, PiecewiseGradientsAreExact) {
  Tensor x = kink_leaf({64}, -1, 1, {-0.5, 0.0, 0.5});
  Tensor w = kink_leaf({64}, -2, 2, {}, 5).detach();
  const std::vector<double> xv = x.detach().to_vector<double>(), wv = w.to_vector<double>();
  struct Rule {
    const char* name;
    Unary fn;
    double (*d)(double);  // the derivative away from the kinks
  };
  const Rule rules[] = {
      {"relu", kiln::relu, [](double v) { return v > 0 ? 1.0 : 0.0; }},
      {"abs", kiln::abs, [](double v) { return v > 0 ? 1.0 : -1.0; }},
      {"clamp", clamp_both, [](double v) { return std::abs(v) < 0.5 ? 1.0 : 0.0; }},
  };
  for (const Rule& r : rules) {
    x.mutable_grad() = Tensor();
    r.fn(x).backward(w);
    const std::vector<double> g = x.grad().to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_EQ(g[i], wv[i] * r.d(xv[i])) << r.name << " at x = " << xv[i];
  }
}

TEST(AutogradKinks, MaximumMinimumBothOrders) {
  // a - b keeps kMargin away from 0 (no ties), and takes both signs.
  for (auto fn : {kiln::maximum, kiln::minimum}) {
    // Fresh leaves per op (gradients accumulate in leaves).
    Tensor a = kink_leaf({3, 4}, -1, 1, {}, 1);
    Tensor d = kink_leaf({3, 4}, -0.8, 0.8, {0.0}, 2).detach();
    Tensor b = (a.detach() + d).detach().requires_grad_();
    expect_gradcheck([&](const std::vector<Tensor>& x) { return fn(x[0], x[1]); }, {a, b});
    // Broadcast: b is a row, so each of its elements wins in some rows and loses in others.
    expect_gradcheck([&](const std::vector<Tensor>& x) { return fn(x[0], x[1]); },
                     {kink_leaf({4, 3}, -1, 1, {-0.3, 0.3}, 4),
                      from_vector<double>({-0.3, 0.3, 0.0}, {3}).requires_grad_()});
  }
}

TEST(AutogradKinks, WhereAndMaskedFillBothBranches) {
  // The condition is computed from the input: x > 0 picks x * x, else -2x (a kink at 0).
  expect_gradcheck(
      [](const std::vector<Tensor>& x) { return where(x[0] > 0.0, x[0] * x[0], x[0] * -2.0); },
      {kink_leaf({3, 5}, -1, 1, {0.0})});
  // Both branches are leaves, broadcast against each other and against the condition.
  expect_gradcheck(
      [](const std::vector<Tensor>& x) { return where(x[0] < x[1], x[1] * 3.0, x[0]); },
      {kink_leaf({4, 3}, -1, 1, {-0.3, 0.3}, 6),
       from_vector<double>({-0.3, 0.3, 0.05}, {3}).requires_grad_()});
  // masked_fill with the mask taken from the input: the filled places get exactly zero.
  Tensor x = kink_leaf({2, 6}, -1, 1, {0.0}, 8);
  expect_gradcheck(
      [](const std::vector<Tensor>& t) { return masked_fill(t[0], t[0] < 0.0, 1.5) * t[0]; }, {x});
  x.mutable_grad() = Tensor();
  masked_fill(x, x < 0.0, 1.5).backward(ones({2, 6}, kFloat64));
  const std::vector<double> xv = x.detach().to_vector<double>(), g = x.grad().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], xv[i] < 0 ? 0.0 : 1.0) << i;
}

// The bytes of t are all zero (+0.0 or -0.0 both count as zero; NaN does not).
void expect_exact_zero(const Tensor& t, const char* what) {
  ASSERT_TRUE(t.defined()) << what;
  for (double v : t.to(kFloat64).to_vector<double>()) EXPECT_EQ(v, 0.0) << what;
}

TEST(AutogradKinks, StepFunctionsHaveExactlyZeroGradient) {
  const Unary steps[] = {kiln::floor, kiln::ceil, kiln::round, kiln::sign};
  const char* names[] = {"floor", "ceil", "round", "sign"};
  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE(names[k]);
    const std::vector<double> kinks = k == 3 ? std::vector<double>{0.0} : step_kinks();
    auto f = [&](const std::vector<Tensor>& x) { return steps[k](x[0]); };
    // Finite differences away from the jumps: the derivative is 0.
    expect_gradcheck(f, {kink_leaf({3, 4}, -3, 3, kinks)});
    for (DType dt : {kFloat64, kFloat32}) {
      Tensor x = kink_leaf({3, 4}, -3, 3, kinks, 9).detach().to(dt).requires_grad_();
      Tensor w = kink_leaf({3, 4}, 0.5, 2, {}, 10).detach().to(dt);
      steps[k](x).backward(w);
      EXPECT_EQ(x.grad().dtype(), dt);
      expect_exact_zero(x.grad(), names[k]);
      // x + step(x): the step adds nothing, so the gradient is exactly w.
      x.mutable_grad() = Tensor();
      (x + steps[k](x) * 3.0).backward(w);
      EXPECT_TRUE(equal(x.grad(), w)) << x.grad() << " vs " << w;
    }
  }
}

TEST(AutogradKinks, ZeroDimLeaves) {
  // A 0-dim leaf against a matrix (broadcast: the gradient sums back to a 0-dim tensor).
  Tensor s = from_vector<double>({0.7}, {}).requires_grad_();
  Tensor s2 = from_vector<double>({-0.4}, {}).requires_grad_();
  expect_gradcheck([](const std::vector<Tensor>& x) { return x[0] * x[1] + exp(x[0]) * abs(x[2]); },
                   {s, leaf({2, 3}), s2});
  EXPECT_EQ(s.grad().dim(), 0);
  EXPECT_EQ(s2.grad().dim(), 0);
  // Unary and reduction over a 0-dim leaf, on both sides of the relu kink.
  for (double v : {-0.6, 0.6}) {
    Tensor z = from_vector<double>({v}, {}).requires_grad_();
    expect_gradcheck(
        [](const std::vector<Tensor>& x) { return relu(x[0]) + sum(x[0] * x[0]) + x[0].mean(); },
        {z});
  }
}

TEST(AutogradKinks, EmptyLeaves) {
  for (Shape shape : {Shape{0}, Shape{0, 3}, Shape{2, 0}}) {
    Tensor x = zeros(shape, kFloat64).requires_grad_();
    Tensor y = ones({1}, kFloat64).requires_grad_();
    // sum over an empty tensor is 0, so the loss only depends on y.
    Tensor loss = sum(relu(x) * 2.0 + abs(x)) + y.sum() * 2.0;
    loss.backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().sizes(), shape);
    EXPECT_EQ(x.grad().dtype(), kFloat64);
    EXPECT_EQ(y.grad().to_vector<double>(), std::vector<double>{2.0});
  }
  // An empty leaf broadcast with a non-empty one through matmul: K = 0 gives zero gradients.
  Tensor a = zeros({3, 0}, kFloat64).requires_grad_();
  Tensor b = zeros({0, 2}, kFloat64).requires_grad_();
  Tensor c = leaf({3, 2});
  (matmul(a, b) + c).sum().backward();
  EXPECT_EQ(a.grad().sizes(), (Shape{3, 0}));
  EXPECT_EQ(b.grad().sizes(), (Shape{0, 2}));
  for (double v : c.grad().to_vector<double>()) EXPECT_EQ(v, 1.0);
}

// Float32 leaves a and c meet a Float64 leaf b in one graph: each Float32 leaf is used once, in a
// product with b, so every op runs in Float64 (promotion) and each gradient comes back in its
// leaf's dtype, cast once at the end of its one edge. The Float32 gradient is the Float64 one
// rounded once: |g32 - g64| <= 2^-24 |g64| (round to nearest).
TEST(AutogradKinks, MixedFloat32Float64Leaves) {
  auto run = [](DType da) {
    Tensor a = kink_leaf({3, 4}, -1, 1, {0.0}, 12).detach().to(da).requires_grad_();
    Tensor b = kink_leaf({4}, 0.5, 2, {}, 13);
    Tensor c = kink_leaf({3, 1}, -1, 1, {}, 14).detach().to(da).requires_grad_();
    Tensor p = a * b, q = c * b;
    Tensor y = relu(p) * b + abs(p) / b - exp(q) * p;
    EXPECT_EQ(y.dtype(), kFloat64);
    y.backward(kink_leaf({3, 4}, -1, 1, {}, 15).detach());
    EXPECT_EQ(a.grad().dtype(), da);
    EXPECT_EQ(b.grad().dtype(), kFloat64);
    EXPECT_EQ(c.grad().dtype(), da);
    return std::vector<Tensor>{a.grad(), b.grad(), c.grad()};
  };
  const std::vector<Tensor> mixed = run(kFloat32), ref = run(kFloat64);
  const char* names[] = {"a (Float32)", "b (Float64)", "c (Float32)"};
  for (int i = 0; i < 3; ++i) {
    const std::vector<double> g = mixed[i].to(kFloat64).to_vector<double>();
    const std::vector<double> r = ref[i].to_vector<double>();
    ASSERT_EQ(g.size(), r.size());
    // b's gradient is Float64 throughout, but sums a's Float32-held values: they are the same
    // values (the leaves are Float32-exact), so b agrees to Float64 rounding as well.
    const double bound = i == 1 ? 1e-15 : std::ldexp(1.0, -24);
    for (size_t k = 0; k < g.size(); ++k)
      EXPECT_LE(std::abs(g[k] - r[k]), bound * std::abs(r[k])) << names[i] << " " << k;
  }
}

// Float32 gradients of every unary rule against the Float64 gradients of the same inputs (the
// inputs and the incoming gradient are Float32-exact, so the difference is the Float32 arithmetic
// of the forward and the rule alone). Bound, per element:
//   |g32 - g64| <= kF32GradBound * (|g64| + |w| * (1 + |x|))
// kF32GradBound = 64 * 2^-24 ~ 3.8e-6: a rule is at most ~10 roundings (each <= 2^-24 relative)
// plus vector math functions of <= 4 ulp each, and the |w| (1 + |x|) term covers the cancellation
// in rules like 1 - tanh(x)^2 and (x + 1) for log1p, where the error is relative to the terms and
// not to their difference.
constexpr double kF32GradBound = 64 * 0x1p-24;

TEST(AutogradKinks, Float32GradientsMatchFloat64WithinBound) {
  struct Case {
    const char* name;
    Unary fn;
    double lo, hi;
    std::vector<double> kinks;
  };
  auto gelu_tanh = [](const Tensor& x) { return gelu(x, "tanh"); };
  auto gelu_erf = [](const Tensor& x) { return gelu(x); };
  auto pow_s = [](const Tensor& x) { return pow(x, 2.5); };
  const Case cases[] = {
      {"abs", kiln::abs, -1, 1, {0.0}},
      {"relu", kiln::relu, -1, 1, {0.0}},
      {"clamp", clamp_both, -1, 1, {-0.5, 0.5}},
      {"exp", kiln::exp, -1, 1, {}},
      {"log", kiln::log, 0.5, 2, {}},
      {"log1p", kiln::log1p, 0, 1, {}},
      {"expm1", kiln::expm1, -1, 1, {}},
      {"sqrt", kiln::sqrt, 0.5, 2, {}},
      {"rsqrt", kiln::rsqrt, 0.5, 2, {}},
      {"reciprocal", kiln::reciprocal, 0.5, 2, {}},
      {"sin", kiln::sin, -2, 2, {}},
      {"cos", kiln::cos, -2, 2, {}},
      {"tanh", kiln::tanh, -2, 2, {}},
      {"sigmoid", kiln::sigmoid, -2, 2, {}},
      {"silu", kiln::silu, -2, 2, {}},
      {"erf", kiln::erf, -2, 2, {}},
      {"square", kiln::square, -2, 2, {}},
      {"gelu", +gelu_erf, -2, 2, {}},
      {"gelu_tanh", +gelu_tanh, -2, 2, {}},
      {"pow", +pow_s, 0.5, 2, {}},
      {"floor", kiln::floor, -3, 3, step_kinks()},
      {"sign", kiln::sign, -1, 1, {0.0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x64 = kink_leaf({257}, c.lo, c.hi, c.kinks, 21);  // > one vector width, with a tail
    Tensor w64 = kink_leaf({257}, -1, 1, {}, 22).detach();
    Tensor x32 = x64.detach().to(kFloat32).requires_grad_();
    c.fn(x64).backward(w64);
    c.fn(x32).backward(w64.to(kFloat32));
    ASSERT_EQ(x32.grad().dtype(), kFloat32);
    const std::vector<double> g32 = x32.grad().to(kFloat64).to_vector<double>();
    const std::vector<double> g64 = x64.grad().to_vector<double>();
    const std::vector<double> xv = x64.detach().to_vector<double>(), wv = w64.to_vector<double>();
    for (size_t k = 0; k < g32.size(); ++k)
      EXPECT_LE(std::abs(g32[k] - g64[k]),
                kF32GradBound * (std::abs(g64[k]) + std::abs(wv[k]) * (1 + std::abs(xv[k]))))
          << "x = " << xv[k] << ": " << g32[k] << " vs " << g64[k];
  }
}

}  // namespace
