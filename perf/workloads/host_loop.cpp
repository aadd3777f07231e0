// host_loop: the newton workload's iteration written as a plain C++ loop, as most programs write
// it: x <- (x + a / x) / 2 over 16 float32 values of a in [0.01, 10000), until the largest
// relative change read back with item() is below 1e-6; 20 such solves a run, reported in µs per
// iteration. Every iteration is 5 small ops and a sync point: the figure is what recording costs
// per sync (the eager tier runs such steps eagerly: docs/tracer.md "The eager tier").
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

constexpr int64_t kElems = 16;
constexpr int kSolves = 20;
constexpr double kConverged = 1e-6;
constexpr int kMaxIterations = 100;     // a safety stop; check() fails if it was reached
constexpr double kTolerance = 0x1p-22;  // as newton's: 4 float32 ulps of the exact root

class HostLoopCase : public Case {
 public:
  HostLoopCase() : a_(ramp_input(kElems, 0.01f, 10000.0f)) {}

  void run() override {
    iterations_ = 0;
    for (int s = 0; s < kSolves; ++s) {
      Tensor x = ones({kElems});
      for (int i = 0; i < kMaxIterations; ++i) {
        Tensor next = (x + a_ / x) * 0.5;
        const float change = amax(abs(next - x) / next).item<float>();
        x = next;
        ++iterations_;
        if (change <= kConverged) break;
      }
      x_ = x;
    }
  }

  void check() const override {
    KILN_CHECK(iterations_ > kSolves && iterations_ < kSolves * kMaxIterations,
               "host_loop: {} iterations for {} solves", iterations_, kSolves);
    std::vector<float> a = a_.to_vector<float>(), x = x_.to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) {
      const double ref = std::sqrt(double(a[i]));
      KILN_CHECK(std::abs(x[i] - ref) <= kTolerance * ref,
                 "host_loop: sqrt({}) is {}, expected {} (relative tolerance {})", a[i], x[i], ref,
                 kTolerance);
    }
  }

  int iterations() const { return iterations_; }

 private:
  Tensor a_, x_;
  int iterations_ = 0;
};

}  // namespace

Workload host_loop_workload() {
  return {"host_loop",
          "Newton sqrt of 16 floats in a C++ loop, item() each iteration (µs per "
          "iteration)",
          "", [](Size, Device) {
            Prepared p;
            auto c = std::make_unique<HostLoopCase>();
            c->run();  // the iteration count depends on the data only: count it once
            p.ops = c->iterations();
            p.c = std::move(c);
            p.shape = fmt::format("{} solves, 16 float32", kSolves);
            return p;
          }};
}

}  // namespace kiln::perf
