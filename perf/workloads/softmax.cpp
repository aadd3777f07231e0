// softmax: softmax over the rows of 8192x1024 float32 (2048x1024 small), written out of
// amax/exp/sum/div (not the fused softmax op):  e = exp(x - amax(x)); y = e / sum(e).
// GB/s counts one read of x and one write of y.
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

class SoftmaxCase : public Case {
 public:
  SoftmaxCase(int64_t rows, int64_t cols, Device d)
      : x_(ramp_input(rows * cols, -8.0f, 8.0f, d).view({rows, cols})) {}
  void run() override {
    Tensor e = exp(x_ - x_.amax({-1}, true));
    y_ = e / e.sum({-1}, true);
  }
  void check() const override {
    // Rows 0, 1 and the last against double precision; relative 1e-5 covers float32 exp and a
    // 1024-term float32 sum.
    const int64_t rows = x_.size(0), cols = x_.size(1);
    const Tensor xh = on_host(x_), yh = on_host(y_);
    const float *x = xh.data_ptr<float>(), *y = yh.data_ptr<float>();
    for (int64_t r : {int64_t{0}, int64_t{1}, rows - 1}) {
      double m = x[r * cols], s = 0;
      for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(x[r * cols + c]));
      for (int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
      for (int64_t c = 0; c < cols; ++c) {
        double ref = std::exp(x[r * cols + c] - m) / s;
        KILN_CHECK(std::abs(y[r * cols + c] - ref) <= 1e-9 + 1e-5 * ref,
                   "softmax: element ({}, {}) is {}, expected {}", r, c, y[r * cols + c], ref);
      }
    }
  }

 private:
  Tensor x_, y_;
};

}  // namespace

Workload softmax_workload() {
  Workload w{"softmax", "softmax over rows of 8192x1024 float32, from amax/exp/sum/div", "",
             [](Size size, Device d) { return prepare_rowwise<SoftmaxCase>(size, d); }, true};
  w.cuda = true;
  return w;
}

}  // namespace kiln::perf
