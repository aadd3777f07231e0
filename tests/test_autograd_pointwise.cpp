// Gradient checks of the pointwise and view ops (finite differences, see gradcheck.h).
#include "gradcheck.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Unary = Tensor (*)(const Tensor&);

struct UnaryCase {
  const char* name;
  Unary fn;
  double lo, hi;  // input range that keeps the function smooth and in its domain
};

class UnaryGrad : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryGrad, MatchesFiniteDifferences) {
  const UnaryCase& c = GetParam();
  auto f = [&](const std::vector<Tensor>& x) { return c.fn(x[0]); };
  expect_gradcheck(f, {leaf({3, 4}, c.lo, c.hi)});
  expect_gradcheck(f, {transposed_leaf(3, 2, c.lo, c.hi)});
}

Tensor gelu_tanh(const Tensor& x) { return gelu(x, "tanh"); }
Tensor gelu_erf(const Tensor& x) { return gelu(x); }
Tensor clamp_mid(const Tensor& x) { return clamp(x, -0.5, 0.5); }
Tensor pow_scalar(const Tensor& x) { return pow(x, 2.5); }
Tensor neg_fn(const Tensor& x) { return -x; }

INSTANTIATE_TEST_SUITE_P(
    Autograd, UnaryGrad,
    ::testing::Values(
        UnaryCase{"neg", neg_fn, -1, 1}, UnaryCase{"abs", kiln::abs, 0.1, 1},
        UnaryCase{"exp", kiln::exp, -1, 1}, UnaryCase{"log", kiln::log, 0.5, 2},
        UnaryCase{"log1p", kiln::log1p, 0, 1}, UnaryCase{"expm1", kiln::expm1, -1, 1},
        UnaryCase{"sqrt", kiln::sqrt, 0.5, 2}, UnaryCase{"rsqrt", kiln::rsqrt, 0.5, 2},
        UnaryCase{"reciprocal", kiln::reciprocal, 0.5, 2}, UnaryCase{"sin", kiln::sin, -2, 2},
        UnaryCase{"cos", kiln::cos, -2, 2}, UnaryCase{"tanh", kiln::tanh, -2, 2},
        UnaryCase{"sigmoid", kiln::sigmoid, -2, 2}, UnaryCase{"relu", kiln::relu, 0.1, 1},
        UnaryCase{"silu", kiln::silu, -2, 2}, UnaryCase{"erf", kiln::erf, -2, 2},
        UnaryCase{"square", kiln::square, -2, 2}, UnaryCase{"gelu", gelu_erf, -2, 2},
        UnaryCase{"gelu_tanh", gelu_tanh, -2, 2}, UnaryCase{"clamp", clamp_mid, -0.4, 0.4},
        UnaryCase{"pow", pow_scalar, 0.5, 2}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Autograd, BinaryOpsWithBroadcasting) {
  auto check = [](auto fn) {
    expect_gradcheck([&](const std::vector<Tensor>& x) { return fn(x[0], x[1]); },
                     {leaf({2, 3}, 0.5, 2, 1), leaf({3}, 0.5, 2, 2)});
    expect_gradcheck([&](const std::vector<Tensor>& x) { return fn(x[0], x[1]); },
                     {transposed_leaf(3, 2, 0.5, 2), leaf({2, 1, 1}, 0.5, 2, 3)});
  };
  check([](const Tensor& a, const Tensor& b) { return a + b; });
  check([](const Tensor& a, const Tensor& b) { return a - b; });
  check([](const Tensor& a, const Tensor& b) { return a * b; });
  check([](const Tensor& a, const Tensor& b) { return a / b; });
  check([](const Tensor& a, const Tensor& b) { return pow(a, b); });
  check([](const Tensor& a, const Tensor& b) { return add(a, b, 2.5); });
  check([](const Tensor& a, const Tensor& b) { return where(a > 1.0, a, b); });
}

TEST(Autograd, ScalarOperands) {
  auto f = [](const std::vector<Tensor>& x) {
    return (2.0 - x[0]) * 3.0 / 1.5 + 4.0 / x[0] - x[0] / 2.0 + pow(2.0, x[0]);
  };
  expect_gradcheck(f, {leaf({5}, 0.5, 2)});
}

TEST(Autograd, MaximumMinimumSplitTies) {
  Tensor a = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  Tensor b = from_vector<double>({1, 5, 0}, {3}).requires_grad_();
  maximum(a, b).backward(ones({3}, kFloat64));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.5, 0, 1}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0.5, 1, 0}));
  expect_gradcheck([](const std::vector<Tensor>& x) { return minimum(x[0], x[1]); },
                   {leaf({4}, -1, 1, 5), leaf({4}, -1, 1, 6)});
}

TEST(Autograd, MaskedFillAndViews) {
  Tensor mask = from_vector<bool>({true, false, false, true, false, true}, {2, 3});
  expect_gradcheck(
      [&](const std::vector<Tensor>& x) { return masked_fill(x[0], mask, 2.0) * x[0]; },
      {leaf({2, 3})});
  expect_gradcheck(
      [](const std::vector<Tensor>& x) {
        Tensor v = x[0].view({3, 4}).t().slice(0, 1, 4, 2).unsqueeze(0);
        return v.expand({2, 2, 3}).squeeze(0) * x[0].select(0, 1).narrow(0, 0, 3);
      },
      {leaf({2, 6})});
  expect_gradcheck(
      [](const std::vector<Tensor>& x) {
        return x[0].permute({2, 0, 1}).reshape({6, 2}) * 2.0;
      },
      {leaf({2, 2, 3})});
}

}  // namespace
