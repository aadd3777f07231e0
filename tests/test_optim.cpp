// SGD and Adam against the update rules of torch.optim written out in scalar double code.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

using namespace kiln;

namespace {

// Gradient of loss = sum(p^2 * c): 2 p c, so each step's gradient is known in closed form.
Tensor loss_of(const Tensor& p, const Tensor& c) { return (p * p * c).sum(); }

TEST(Optim, SgdMomentumWeightDecayNesterov) {
  for (bool nesterov : {false, true}) {
    std::vector<double> p0 = {1.0, -2.0, 0.5}, c = {1.0, 0.5, 2.0};
    Tensor p = from_vector<double>(p0, {3}).requires_grad_();
    Tensor ct = from_vector<double>(c, {3});
    optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(nesterov));
    std::vector<double> ref = p0, buf(3, 0.0);
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      loss_of(p, ct).backward();
      opt.step();
      for (int i = 0; i < 3; ++i) {
        double g = 2 * ref[i] * c[i] + 0.01 * ref[i];
        buf[i] = step == 0 ? g : 0.9 * buf[i] + g;
        double d = nesterov ? g + 0.9 * buf[i] : buf[i];
        ref[i] -= 0.1 * d;
      }
    }
    std::vector<double> got = p.to_vector<double>();
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], ref[i], 1e-12) << "nesterov " << nesterov;
  }
}

TEST(Optim, Adam) {
  std::vector<double> p0 = {1.0, -2.0, 0.5}, c = {1.0, 0.5, 2.0};
  Tensor p = from_vector<double>(p0, {3}).requires_grad_();
  Tensor ct = from_vector<double>(c, {3});
  optim::Adam opt({p}, optim::AdamOptions(0.05).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1));
  std::vector<double> ref = p0, m(3, 0.0), v(3, 0.0);
  for (int t = 1; t <= 6; ++t) {
    opt.zero_grad();
    loss_of(p, ct).backward();
    opt.step();
    for (int i = 0; i < 3; ++i) {
      double g = 2 * ref[i] * c[i] + 0.1 * ref[i];
      m[i] = 0.8 * m[i] + 0.2 * g;
      v[i] = 0.99 * v[i] + 0.01 * g * g;
      double mh = m[i] / (1 - std::pow(0.8, t)), vh = v[i] / (1 - std::pow(0.99, t));
      ref[i] -= 0.05 * mh / (std::sqrt(vh) + 1e-6);
    }
  }
  std::vector<double> got = p.to_vector<double>();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], ref[i], 1e-12);
}

TEST(Optim, ZeroGradAndErrors) {
  Tensor p = ones({2}, kFloat64).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  (p * 2.0).sum().backward();
  EXPECT_TRUE(p.grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
  opt.step();  // no gradient: nothing changes
  EXPECT_EQ(p.to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_THROW(optim::SGD({p * 2.0}, optim::SGDOptions(0.1)), Error);
  EXPECT_THROW(optim::SGD({p}, optim::SGDOptions(-1)), Error);
  EXPECT_THROW(optim::Adam({p}, optim::AdamOptions().betas({1.0, 0.5})), Error);
}

}  // namespace
