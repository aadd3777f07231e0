// layernorm: layer_norm over the rows of 8192x1024 float32 (2048x1024 small), written out of
// mean/var/sqrt and pointwise ops (not the fused layer_norm op):
//   y = (x - mean(x)) / sqrt(var(x) + 1e-5) * w + b   (biased variance, per row)
// GB/s counts one read of x and one write of y (w and b are negligible).
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

constexpr double kEps = 1e-5;

class LayerNormCase : public Case {
 public:
  LayerNormCase(int64_t rows, int64_t cols, Device d)
      : x_(ramp_input(rows * cols, -3.0f, 3.0f, d).view({rows, cols})),
        w_(ramp_input(cols, 0.5f, 1.5f, d)),
        b_(ramp_input(cols, -0.5f, 0.5f, d)) {}
  void run() override {
    Tensor mu = x_.mean({-1}, true);
    Tensor var = x_.var({-1}, false, true);
    y_ = (x_ - mu) / sqrt(var + kEps) * w_ + b_;
  }
  void check() const override {
    // Rows 0, 1 and the last against double precision; float32 sums over 1024 values and the
    // division keep the error under 1e-4 for unit-scale outputs.
    const int64_t rows = x_.size(0), cols = x_.size(1);
    const Tensor xh = on_host(x_), yh = on_host(y_), wh = on_host(w_), bh = on_host(b_);
    const float *x = xh.data_ptr<float>(), *y = yh.data_ptr<float>();
    const float *w = wh.data_ptr<float>(), *b = bh.data_ptr<float>();
    for (int64_t r : {int64_t{0}, int64_t{1}, rows - 1}) {
      double s = 0, ss = 0;
      for (int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
      double mu = s / cols;
      for (int64_t c = 0; c < cols; ++c) ss += (x[r * cols + c] - mu) * (x[r * cols + c] - mu);
      double inv = 1.0 / std::sqrt(ss / cols + kEps);
      for (int64_t c = 0; c < cols; ++c) {
        double ref = (x[r * cols + c] - mu) * inv * w[c] + b[c];
        KILN_CHECK(std::abs(y[r * cols + c] - ref) <= 1e-4 + 1e-4 * std::abs(ref),
                   "layernorm: element ({}, {}) is {}, expected {}", r, c, y[r * cols + c], ref);
      }
    }
  }

 private:
  Tensor x_, w_, b_, y_;
};

}  // namespace

Workload layernorm_workload() {
  Workload w{"layernorm", "layer_norm over rows of 8192x1024 float32, from mean/var/sqrt", "",
             [](Size size, Device d) { return prepare_rowwise<LayerNormCase>(size, d); }, true};
  w.cuda = true;
  return w;
}

}  // namespace kiln::perf
