// libtorch versions of kiln-perf's loop workloads, as host loops (libtorch 1.13 has no scan or
// while_loop, so there is no peer for rnn_scan):
//  - rnn_loop: the same tanh RNN forward, h' = tanh(x_t W^T + h U^T + b), over T steps, the
//    states stacked at the end;
//  - newton: the same Newton iteration for sqrt, its convergence test read on the host each
//    iteration (.item(), as kiln's eager while_loop reads its predicate).
// Same sizes and the same kind of inputs as kiln (libtorch's own random numbers for the RNN).
#include <torch/utils.h>

#include <cmath>
#include <vector>

#include "perf/peers/libtorch_cases.h"

namespace kiln::perf::peer {

namespace {

class RnnLoopCase : public PeerCase {
 public:
  RnnLoopCase(int64_t steps, int64_t batch, int64_t hidden) : steps_(steps) {
    torch::manual_seed(0);
    xs_ = torch::randn({steps, batch, hidden});
    w_ = torch::randn({hidden, hidden}) * (1.0 / std::sqrt(double(hidden)));
    u_ = torch::randn({hidden, hidden}) * (1.0 / std::sqrt(double(hidden)));
    b_ = torch::randn({hidden}) * 0.1;
    h0_ = torch::zeros({batch, hidden});
  }
  void run() override {
    torch::NoGradGuard no_grad;
    at::Tensor h = h0_;
    std::vector<at::Tensor> hs;
    hs.reserve(static_cast<size_t>(steps_));
    for (int64_t t = 0; t < steps_; ++t) {
      h = at::tanh(at::linear(xs_.select(0, t), w_, b_) + at::linear(h, u_));
      hs.push_back(h);
    }
    ys_ = at::stack(hs, 0);
  }
  void check() const override {
    // Step 0 from h = 0 in float64: tanh(x_0 W^T + b).
    at::Tensor ref = at::tanh(
        at::linear(xs_.select(0, 0).to(at::kDouble), w_.to(at::kDouble), b_.to(at::kDouble)));
    if (ys_.sizes() != xs_.sizes() || !at::allclose(ys_.select(0, 0).to(at::kDouble), ref, 0, 1e-4))
      check_failed("libtorch rnn_loop: the first step differs from tanh(x_0 W^T + b)");
    if (!at::isfinite(ys_).all().item<bool>())
      check_failed("libtorch rnn_loop: the output has non-finite values");
  }

 private:
  int64_t steps_;
  at::Tensor xs_, w_, u_, b_, h0_, ys_;
};

class NewtonCase : public PeerCase {
 public:
  explicit NewtonCase(int64_t n) : a_(torch_ramp(n, 0.01f, 10000.0f)) {}
  void run() override {
    at::Tensor x = at::ones_like(a_), prev = at::zeros_like(a_);
    iterations_ = 0;
    while ((at::abs(x - prev) / x).amax().item<double>() > 1e-6 && iterations_ < 100) {
      prev = x;
      x = (x + a_ / x) * 0.5;
      ++iterations_;
    }
    x_ = x;
  }
  void check() const override {
    at::Tensor ref = at::sqrt(a_.to(at::kDouble));
    if (iterations_ >= 100 || !at::allclose(x_.to(at::kDouble), ref, 0x1p-22, 0))
      check_failed("libtorch newton: the result is not sqrt(a) within 2^-22 relative");
  }

 private:
  at::Tensor a_, x_;
  int iterations_ = 0;
};

}  // namespace

PeerPrepared torch_rnn_loop(bool small) {
  int64_t steps = small ? 16 : 64, batch = small ? 16 : 64, hidden = small ? 64 : 256;
  return {std::make_unique<RnnLoopCase>(steps, batch, hidden),
          "T " + std::to_string(steps) + ", batch " + std::to_string(batch) + ", hidden " +
              std::to_string(hidden),
          0, 0};
}

PeerPrepared torch_newton(bool small) {
  int log2n = small ? 16 : 20;
  return {std::make_unique<NewtonCase>(int64_t{1} << log2n),
          "2^" + std::to_string(log2n) + " float32", 0, 0};
}

}  // namespace kiln::perf::peer
