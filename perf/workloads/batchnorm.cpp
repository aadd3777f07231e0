// batchnorm: a batch-norm forward in training mode over an NCHW activation of 32x64x56x56
// float32 (8x16x32x32 small), written out of mean/var/sqrt and pointwise ops:
//   y = (x - mean(x, {0, 2, 3})) / sqrt(var(x, {0, 2, 3}) + 1e-5) * w + b   (biased, per channel)
// The statistics reduce over dims that are not one block: eager gathers each channel's elements
// into a row first (ops/cpu/reduce_plan.cpp), the JIT fuses that gather with the reductions'
// row kernel (docs/jit.md "Reductions over other dim sets"). GB/s counts one read of x and one
// write of y (w and b are negligible).
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

constexpr double kEps = 1e-5;

class BatchNormCase : public Case {
 public:
  BatchNormCase(int64_t n, int64_t c, int64_t hw)
      : x_(ramp_input(n * c * hw * hw, -3.0f, 3.0f).view({n, c, hw, hw})),
        w_(ramp_input(c, 0.5f, 1.5f).view({1, c, 1, 1})),
        b_(ramp_input(c, -0.5f, 0.5f).view({1, c, 1, 1})) {}
  void run() override {
    Tensor mu = x_.mean({0, 2, 3}, true);
    Tensor var = x_.var({0, 2, 3}, false, true);
    y_ = (x_ - mu) / sqrt(var + kEps) * w_ + b_;
  }
  void check() const override {
    // Channels 0, 1 and the last against double precision over every element of the channel;
    // float32 sums of up to 10^5 values of magnitude <= 3 in eager's pairwise order keep the
    // error far under 1e-4 for unit-scale outputs.
    const int64_t n = x_.size(0), c = x_.size(1), hw = x_.size(2) * x_.size(3);
    const float *x = x_.data_ptr<float>(), *w = w_.data_ptr<float>(), *b = b_.data_ptr<float>();
    const Tensor yh = on_host(y_);
    const float* y = yh.data_ptr<float>();
    for (int64_t ch : {int64_t{0}, int64_t{1}, c - 1}) {
      auto at = [&](int64_t i, int64_t j) { return (i * c + ch) * hw + j; };
      double s = 0, ss = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < hw; ++j) s += x[at(i, j)];
      const double mu = s / static_cast<double>(n * hw);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < hw; ++j) ss += (x[at(i, j)] - mu) * (x[at(i, j)] - mu);
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n * hw) + kEps);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < hw; ++j) {
          const double ref = (x[at(i, j)] - mu) * inv * w[ch] + b[ch];
          KILN_CHECK(std::abs(y[at(i, j)] - ref) <= 1e-4 + 1e-4 * std::abs(ref),
                     "batchnorm: channel {} element ({}, {}) is {}, expected {}", ch, i, j,
                     y[at(i, j)], ref);
        }
    }
  }

 private:
  Tensor x_, w_, b_, y_;
};

}  // namespace

Workload batchnorm_workload() {
  return {"batchnorm",
          "batch-norm forward (training) over 32x64x56x56 float32 NCHW, from mean/var/sqrt "
          "over {0, 2, 3}",
          "",
          [](Size size, Device) {
            const bool small = size == Size::Small;
            const int64_t n = small ? 8 : 32, c = small ? 16 : 64, hw = small ? 32 : 56;
            Prepared p;
            p.c = std::make_unique<BatchNormCase>(n, c, hw);
            p.shape = fmt::format("{}x{}x{}x{} float32", n, c, hw, hw);
            p.bytes = 8.0 * static_cast<double>(n * c * hw * hw);
            return p;
          },
          true};
}

}  // namespace kiln::perf
