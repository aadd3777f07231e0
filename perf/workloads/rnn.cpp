// rnn_loop and rnn_scan: the forward pass of a tanh RNN, h' = tanh(x_t W^T + h U^T + b), over T 64
// steps of a batch of 64 with hidden and input width 256 (T 16, batch 16, hidden 64 small), without
// autograd. The same cell runs two ways: rnn_loop is a plain C++ loop over time (T cells of
// dispatched ops, the outputs stacked at the end), rnn_scan is one kiln::scan (when recording, one
// scan node whose body is traced once). Both return the final state and every step's state
// stacked to [T, batch, hidden].
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

// Results are checked against a float64 scalar loop; float32 sums of 2 x 256 products of values
// of order 1 round to about 1e-6, and tanh does not amplify, so 1e-4 leaves a wide margin while
// any wrong step (a transposed weight, a missed bias, a stale state) is off by far more.
constexpr double kTolerance = 1e-4;

class RnnCase : public Case {
 public:
  RnnCase(int64_t steps, int64_t batch, int64_t hidden, bool use_scan)
      : use_scan_(use_scan), steps_(steps), batch_(batch), hidden_(hidden) {
    manual_seed(0);
    xs_ = randn({steps, batch, hidden});
    w_ = randn({hidden, hidden}) * (1.0 / std::sqrt(double(hidden)));
    u_ = randn({hidden, hidden}) * (1.0 / std::sqrt(double(hidden)));
    b_ = randn({hidden}) * 0.1;
    h0_ = zeros({batch, hidden});
  }

  void run() override {
    NoGradGuard no_grad;
    auto cell = [&](const Tensor& x, const Tensor& h) {
      return tanh(linear(x, w_, b_) + linear(h, u_));
    };
    if (use_scan_) {
      auto [final_h, ys] = scan(
          [&](const TensorList& carry, const TensorList& x) {
            Tensor h = cell(x[0], carry[0]);
            return std::pair<TensorList, TensorList>{{h}, {h}};
          },
          {h0_}, {xs_});
      h_ = final_h[0];
      ys_ = ys[0];
    } else {
      Tensor h = h0_;
      std::vector<Tensor> hs;
      hs.reserve(static_cast<size_t>(steps_));
      for (int64_t t = 0; t < steps_; ++t) hs.push_back(h = cell(xs_.select(0, t), h));
      h_ = h;
      ys_ = stack(hs, 0);
    }
  }

  void check() const override {
    const char* what = use_scan_ ? "rnn_scan" : "rnn_loop";
    KILN_CHECK(ys_.sizes() == xs_.sizes(), "{}: ys has shape {}, expected {}", what,
               shape_str(ys_.sizes()), shape_str(xs_.sizes()));
    std::vector<float> xs = xs_.to_vector<float>(), w = w_.to_vector<float>(),
                       u = u_.to_vector<float>(), b = b_.to_vector<float>();
    std::vector<float> ys = ys_.contiguous().to_vector<float>(), hf = h_.to_vector<float>();
    const size_t H = static_cast<size_t>(hidden_), B = static_cast<size_t>(batch_);
    // The recurrence of the first and last batch rows in float64, compared at every step.
    for (size_t row : {size_t{0}, B - 1}) {
      std::vector<double> h(H, 0.0), next(H);
      for (size_t t = 0; t < static_cast<size_t>(steps_); ++t) {
        const float* x = &xs[(t * B + row) * H];
        for (size_t j = 0; j < H; ++j) {
          double s = b[j];
          for (size_t k = 0; k < H; ++k) s += double(x[k]) * w[j * H + k] + h[k] * u[j * H + k];
          next[j] = std::tanh(s);
        }
        h.swap(next);
        for (size_t j = 0; j < H; ++j) {
          float got = ys[(t * B + row) * H + j];
          KILN_CHECK(std::abs(got - h[j]) <= kTolerance,
                     "{}: h[t={}, batch={}, {}] is {}, expected {} (float64 reference)", what, t,
                     row, j, got, h[j]);
        }
      }
      for (size_t j = 0; j < H; ++j)
        KILN_CHECK(std::abs(hf[row * H + j] - h[j]) <= kTolerance,
                   "{}: final h[batch={}, {}] is {}, expected {}", what, row, j, hf[row * H + j],
                   h[j]);
    }
  }

 private:
  bool use_scan_;
  int64_t steps_, batch_, hidden_;
  Tensor xs_, w_, u_, b_, h0_, h_, ys_;
};

Workload rnn_workload(std::string name, std::string what, bool use_scan) {
  return {std::move(name), std::move(what), "", [use_scan](Size size, Device) {
            bool small = size == Size::Small;
            int64_t steps = small ? 16 : 64, batch = small ? 16 : 64, hidden = small ? 64 : 256;
            Prepared p;
            p.c = std::make_unique<RnnCase>(steps, batch, hidden, use_scan);
            p.shape = fmt::format("T {}, batch {}, hidden {}", steps, batch, hidden);
            return p;
          }};
}

}  // namespace

Workload rnn_loop_workload() {
  return rnn_workload("rnn_loop",
                      "tanh RNN forward, T 64, batch 64, hidden 256, as a C++ loop (ms)", false);
}

Workload rnn_scan_workload() {
  return rnn_workload("rnn_scan", "the same tanh RNN as one kiln::scan over time (ms)", true);
}

}  // namespace kiln::perf
