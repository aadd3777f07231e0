// loss: a mean squared error over 2^23 float32 pairs (2^20 small), `((a - b) * (a - b)).mean()`:
// a full reduction of a large tensor, as a loss, a norm or a statistic is. Eager computes the
// difference, the square and the mean as three ops (two temporaries written and read back); the
// JIT fuses them into one row kernel over one long row, whose chunks the launcher splits across
// the threads (docs/jit.md "Long rows across threads"). GB/s counts one read of a and b.
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

class LossCase : public Case {
 public:
  explicit LossCase(int64_t n) : a_(ramp_input(n, -1.0f, 1.0f)), b_((a_ * a_ - 0.25).contiguous()) {
    (void)b_.data_ptr<float>();  // computed before the timing
  }
  void run() override { y_ = ((a_ - b_) * (a_ - b_)).mean(); }
  void check() const override {
    // Against a float64 sum; float32 pairwise sums of n terms in [0, 6.25] err by far less than
    // 1e-5 of the mean.
    const int64_t n = a_.size(0);
    const float* a = a_.data_ptr<float>();
    const float* b = b_.data_ptr<float>();
    double s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
      s += d * d;
    }
    const double want = s / static_cast<double>(n);
    const float got = on_host(y_).item<float>();
    KILN_CHECK(std::abs(got - want) <= 1e-5 * want,
               "loss: mean squared error {} of {} pairs, "
               "expected {}",
               got, n, want);
  }

 private:
  Tensor a_, b_, y_;
};

}  // namespace

Workload loss_workload() {
  Workload w{"loss", "((a - b) * (a - b)).mean() over 2^23 float32 pairs: one long row", "",
             nullptr, true};
  w.prepare = [](Size size, Device) {
    const int64_t n = size == Size::Small ? int64_t{1} << 20 : int64_t{1} << 23;
    Prepared p;
    p.c = std::make_unique<LossCase>(n);
    p.shape = fmt::format("2^{} float32", size == Size::Small ? 20 : 23);
    p.bytes = 8.0 * static_cast<double>(n);
    return p;
  };
  return w;
}

}  // namespace kiln::perf
