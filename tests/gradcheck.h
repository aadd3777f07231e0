// Gradient checking: compares backward() with central finite differences, in Float64.
// For f: inputs -> output, and a fixed random weight w of the output's shape, the analytic
// vector-Jacobian product (out.backward(w), then each input's .grad) must match
// d/dx_k sum(w * f(x)) estimated as (F(x + h e_k) - F(x - h e_k)) / 2h with h = 1e-6.
// Tolerance: |analytic - numeric| <= atol + rtol * |numeric|, atol = 1e-6, rtol = 1e-5 by default
// (float64 central differences are accurate to ~1e-9 on these smooth functions).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

using GradFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Element k (row-major logical order) of a Float64 tensor of any strides.
inline double* element_ptr(const Tensor& t, int64_t k) {
  const auto& sizes = t.impl()->sizes();
  const auto& strides = t.impl()->strides();
  int64_t off = 0;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    off += (k % sizes[d]) * strides[d];
    k /= sizes[d];
  }
  return static_cast<double*>(t.impl()->data()) + off;
}

inline double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  std::vector<double> v = out.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

// Leaves of Float64 built by `make` are checked; each must require grad.
inline void expect_gradcheck(const GradFn& f, const std::vector<Tensor>& inputs, double atol = 1e-6,
                             double rtol = 1e-5, double h = 1e-6) {
  for (const Tensor& x : inputs) {
    ASSERT_EQ(x.dtype(), kFloat64);
    ASSERT_TRUE(x.requires_grad());
    x.detach();  // inputs are leaves
  }
  Tensor out = f(inputs);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> w(out.numel());
  for (double& v : w) v = dist(rng);
  out.backward(from_vector<double>(w, out.sizes()));

  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    Tensor g = x.grad();
    std::vector<double> analytic =
        g.defined() ? g.to_vector<double>() : std::vector<double>(x.numel(), 0.0);
    ASSERT_EQ(static_cast<int64_t>(analytic.size()), x.numel()) << "input " << i;
    for (int64_t k = 0; k < x.numel(); ++k) {
      double* p = element_ptr(x, k);
      double orig = *p;
      *p = orig + h;
      double up = weighted_sum(f(inputs), w);
      *p = orig - h;
      double down = weighted_sum(f(inputs), w);
      *p = orig;
      double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(analytic[k], numeric, atol + rtol * std::abs(numeric))
          << "input " << i << " element " << k;
    }
  }
}

// A Float64 leaf with values in [lo, hi), requiring grad.
inline Tensor leaf(Shape shape, double lo = -1.0, double hi = 1.0, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return from_vector<double>(v, shape).requires_grad_();
}

// A non-contiguous Float64 leaf: the transpose of a fresh [cols, rows] tensor.
inline Tensor transposed_leaf(int64_t rows, int64_t cols, double lo = -1.0, double hi = 1.0,
                              uint32_t seed = 11) {
  Tensor base = leaf({cols, rows}, lo, hi, seed).detach();
  return base.t().requires_grad_();
}

}  // namespace kiln::testing
