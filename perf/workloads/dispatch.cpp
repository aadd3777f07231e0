// dispatch: 1000 chained adds on 16-element float32 tensors, reported in µs per op. The tensors
// are tiny, so the figure is the per-op overhead: dispatcher, meta function, output allocation.
#include "perf/workload.h"

namespace kiln::perf {

namespace {

constexpr int kChain = 1000;
constexpr int64_t kElems = 16;

class DispatchCase : public Case {
 public:
  DispatchCase() : x_(ramp_input(kElems, 0.0f, 1.0f)), step_(ones({kElems})) {}
  void run() override {
    Tensor y = x_;
    for (int i = 0; i < kChain; ++i) y = y + step_;
    y_ = y;
  }
  void check() const override {
    // x + 1000 * 1.0, summed one step at a time: exact in float32 for x in [0, 1) to 2^-13.
    std::vector<float> x = x_.to_vector<float>(), y = y_.to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      float ref = x[i];
      for (int k = 0; k < kChain; ++k) ref += 1.0f;
      KILN_CHECK(y[i] == ref, "dispatch: element {} is {}, expected {}", i, y[i], ref);
    }
  }

 private:
  Tensor x_, step_, y_;
};

}  // namespace

Workload dispatch_workload() {
  return {"dispatch", "1000 chained adds on 16-element tensors (µs per op)", "", [](Size, Device) {
            Prepared p;
            p.c = std::make_unique<DispatchCase>();
            p.shape = "1000 x add, 16 float32";
            p.ops = kChain;
            return p;
          }};
}

}  // namespace kiln::perf
