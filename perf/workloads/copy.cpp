// copy: y.copy_(x) on 2^26 float32 (2^24 small): eager copy speed, and one half of the `ceiling`
// (perf/workloads/ceiling.cpp) that the other workloads' GB/s are compared with (copy_fraction).
#include "perf/workload.h"

namespace kiln::perf {

namespace {

class CopyCase : public Case {
 public:
  CopyCase(int64_t n, Device d)
      : x_(ramp_input(n, -1.0f, 1.0f, d)), y_(zeros({n}, TensorOptions().device(d))) {}
  void run() override { y_.copy_(x_); }
  void check() const override {
    const Tensor xh = on_host(x_), yh = on_host(y_);
    const float* x = xh.data_ptr<float>();
    const float* y = yh.data_ptr<float>();
    for (int64_t i = 0; i < x_.numel(); ++i)
      KILN_CHECK(x[i] == y[i], "copy: element {} is {}, expected {}", i, y[i], x[i]);
  }

 private:
  Tensor x_, y_;
};

}  // namespace

Workload copy_workload() {
  Workload w{"copy", "y.copy_(x), 2^26 float32: eager copy speed (GB/s read + written)", "",
             [](Size size, Device d) {
               int64_t n = size == Size::Small ? (int64_t{1} << 24) : (int64_t{1} << 26);
               Prepared p;
               p.c = std::make_unique<CopyCase>(n, d);
               p.shape = size == Size::Small ? "2^24 float32" : "2^26 float32";
               p.bytes = 2.0 * 4.0 * static_cast<double>(n);
               return p;
             },
             true};
  w.cuda = true;
  return w;
}

}  // namespace kiln::perf
