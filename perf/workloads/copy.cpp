// copy: y.copy_(x) on 2^26 float32 (2^24 small): eager copy speed, and one half of the `ceiling`
// (perf/workloads/ceiling.cpp) that the other workloads' GB/s are compared with (copy_fraction).
#include "perf/workload.h"

namespace kiln::perf {

namespace {

class CopyCase : public Case {
 public:
  explicit CopyCase(int64_t n) : x_(ramp_input(n, -1.0f, 1.0f)), y_(zeros({n})) {}
  void run() override { y_.copy_(x_); }
  void check() const override {
    const float* x = x_.data_ptr<float>();
    const float* y = y_.data_ptr<float>();
    for (int64_t i = 0; i < x_.numel(); ++i)
      KILN_CHECK(x[i] == y[i], "copy: element {} is {}, expected {}", i, y[i], x[i]);
  }

 private:
  Tensor x_, y_;
};

}  // namespace

Workload copy_workload() {
  return {"copy", "y.copy_(x), 2^26 float32: eager copy speed (GB/s read + written)", "",
          [](Size size, Device) {
            int64_t n = size == Size::Small ? (int64_t{1} << 24) : (int64_t{1} << 26);
            Prepared p;
            p.c = std::make_unique<CopyCase>(n);
            p.shape = size == Size::Small ? "2^24 float32" : "2^26 float32";
            p.bytes = 2.0 * 4.0 * static_cast<double>(n);
            return p;
          },
          true};
}

}  // namespace kiln::perf
