// newton: element-wise Newton iteration for sqrt(a), x <- (x + a / x) / 2 from x = 1, over 2^20
// float32 values of a in [0.01, 10000) (2^16 small), as one kiln::while_loop that runs until the
// largest relative change of an iteration is below 1e-6. The predicate is a lazy tensor (amax of
// the relative change, compared on the device); the iteration count (about a dozen) depends on the
// data, which is what the workload stresses.
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

constexpr double kConverged = 1e-6;      // largest relative change of the last iteration
constexpr int64_t kMaxIterations = 100;  // a safety stop; check() fails if it was reached
// Once the relative change is below 1e-6 the quadratic convergence leaves an error near 1e-12,
// far below float32's rounding, so each result is sqrt(a) up to the rounding of the last step's
// division, addition and halving: within 4 float32 ulps (2^-22 relative) of the exact root.
constexpr double kTolerance = 0x1p-22;

class NewtonCase : public Case {
 public:
  explicit NewtonCase(int64_t n) : a_(ramp_input(n, 0.01f, 10000.0f)) {}

  void run() override {
    // Carried: {x, the largest relative change of the last iteration, the iteration count}. The
    // body computes the change itself rather than carrying the previous x: a body that returns a
    // carried value unchanged is not traced (it falls back to eager, recorded op by op).
    auto not_converged = [](const TensorList& c) {
      return logical_and(c[1] > kConverged, c[2] < kMaxIterations);
    };
    auto step = [this](const TensorList& c) {
      Tensor x = (c[0] + a_ / c[0]) * 0.5;
      return TensorList{x, amax(abs(x - c[0]) / x), c[2] + 1};
    };
    out_ = while_loop(
        not_converged, step,
        {ones_like(a_), scalar_tensor(1.0, kFloat32), scalar_tensor(int64_t{0}, kInt64)});
  }

  void check() const override {
    int64_t iterations = out_[2].item<int64_t>();
    KILN_CHECK(iterations > 0 && iterations < kMaxIterations,
               "newton: stopped after {} iterations, expected convergence in 1 to {}", iterations,
               kMaxIterations - 1);
    std::vector<float> a = a_.to_vector<float>(), x = out_[0].to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) {
      double ref = std::sqrt(double(a[i]));
      KILN_CHECK(std::abs(x[i] - ref) <= kTolerance * ref,
                 "newton: sqrt({}) is {} after {} iterations, expected {} (relative tolerance {})",
                 a[i], x[i], iterations, ref, kTolerance);
    }
  }

 private:
  Tensor a_;
  TensorList out_;
};

}  // namespace

Workload newton_workload() {
  return {"newton", "Newton iteration for sqrt with while_loop, 2^20 float32, until converged (ms)",
          "", [](Size size, Device) {
            int log2n = size == Size::Small ? 16 : 20;
            Prepared p;
            p.c = std::make_unique<NewtonCase>(int64_t{1} << log2n);
            p.shape = fmt::format("2^{} float32", log2n);
            return p;
          }};
}

}  // namespace kiln::perf
