// colsum: column sums x.sum({0}) of a float32 matrix of 2^24 elements (2^20 small) at two
// widths: 4 columns (tall and skinny: batch statistics of a few features) and 64 (a bias
// gradient). Eager reduces both in its column order (ops/cpu/reduce_loops.h col_block: 16-column
// windows, four 64-row runs side by side); the JIT's column kernel takes 16 columns or more
// where its calls keep every thread busy, else the step runs eagerly. GB/s counts one read of x.
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

class ColSumCase : public Case {
 public:
  ColSumCase(int64_t rows, int64_t cols)
      : x_(ramp_input(rows * cols, -1.0f, 1.0f).view({rows, cols})) {}
  void run() override { y_ = x_.sum({0}); }
  void check() const override {
    // Every column against a float64 sum; a float32 sum of n terms of magnitude <= 1 in
    // blocks of 64 combined pairwise errs by far less than 1e-5 * n.
    const int64_t rows = x_.size(0), cols = x_.size(1);
    const float* x = x_.data_ptr<float>();
    const Tensor yh = on_host(y_);
    const float* y = yh.data_ptr<float>();
    for (int64_t c = 0; c < cols; ++c) {
      double s = 0;
      for (int64_t r = 0; r < rows; ++r) s += x[r * cols + c];
      KILN_CHECK(std::abs(y[c] - s) <= 1e-5 * static_cast<double>(rows),
                 "colsum: column {} of [{}, {}] is {}, expected {}", c, rows, cols, y[c], s);
    }
  }

 private:
  Tensor x_, y_;
};

}  // namespace

Workload colsum_workload() {
  Workload w{"colsum", "x.sum({0}) of 2^24 float32 elements as N columns, N = 4, 64", "", nullptr,
             true};
  w.param_name = "cols";
  w.param_values = [](Size) { return std::vector<int64_t>{4, 64}; };
  w.prepare_at = [](Size size, Device, int64_t cols) {
    const int64_t elements = size == Size::Small ? int64_t{1} << 20 : int64_t{1} << 24;
    Prepared p;
    p.c = std::make_unique<ColSumCase>(elements / cols, cols);
    p.shape = fmt::format("{}x{} float32", elements / cols, cols);
    p.bytes = 4.0 * static_cast<double>(elements);
    return p;
  };
  return w;
}

}  // namespace kiln::perf
