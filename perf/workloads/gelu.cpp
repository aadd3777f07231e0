// gelu: tanh-approximate GELU written out of primitives (not the fused gelu op), 2^24 float32
// (2^22 small): 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3))). Eager runs it as eight
// separate ops; the JIT is meant to fuse it into one pass. GB/s counts one read and one write.
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

Tensor gelu_from_primitives(const Tensor& x) {
  Tensor inner = (x + 0.044715 * x * x * x) * 0.79788456;
  return 0.5 * x * (1.0 + tanh(inner));
}

class GeluCase : public Case {
 public:
  GeluCase(int64_t n, Device d) : x_(ramp_input(n, -6.0f, 6.0f, d)) {}
  void run() override { y_ = gelu_from_primitives(x_); }
  void check() const override {
    // Every 997th element against a double-precision reference; 1e-5 absolute covers float32
    // rounding of eight chained ops on |x| <= 6 (results are at most 6 in magnitude).
    const Tensor xh = on_host(x_), yh = on_host(y_);
    const float* x = xh.data_ptr<float>();
    const float* y = yh.data_ptr<float>();
    for (int64_t i = 0; i < x_.numel(); i += 997) {
      double v = x[i];
      double ref = 0.5 * v * (1.0 + std::tanh(0.79788456 * (v + 0.044715 * v * v * v)));
      KILN_CHECK(std::abs(y[i] - ref) <= 1e-5 + 1e-5 * std::abs(ref),
                 "gelu: element {} is {} for x = {}, expected {}", i, y[i], v, ref);
    }
  }

 private:
  Tensor x_, y_;
};

}  // namespace

Workload gelu_workload() {
  Workload w{"gelu",
             "tanh-approx GELU out of primitives, 2^24 float32 (GB/s: one read + one write)", "",
             [](Size size, Device d) {
               int64_t n = size == Size::Small ? (int64_t{1} << 22) : (int64_t{1} << 24);
               Prepared p;
               p.c = std::make_unique<GeluCase>(n, d);
               p.shape = size == Size::Small ? "2^22 float32" : "2^24 float32";
               p.bytes = 2.0 * 4.0 * static_cast<double>(n);
               return p;
             },
             true};
  w.cuda = true;
  return w;
}

}  // namespace kiln::perf
