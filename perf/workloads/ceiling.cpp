// ceiling: the memory-bandwidth ceiling of BENCHMARKS.md, the better of `copy_` and a streaming
// copy (perf/stream_copy.h: non-temporal stores) of 2^26 float32 (2^24 small), both measured in
// the same run. This workload times the streaming copy, once per device in mode "native" (plain
// C++, no kiln op: the same in every kiln mode); attach_ceilings() (perf/runner.cpp) then makes
// its figure the ceiling and computes every GB/s figure's copy_fraction against it.
// On a CUDA device the reference copy is the driver's device-to-device memcpy (cuMemcpyDtoDAsync
// on kiln's stream, what cudaMemcpy does), the figure the "copy within 90% of cudaMemcpy"
// is against.
#include "perf/stream_copy.h"
#include "perf/workload.h"
#include "runtime/device_copy.h"

namespace kiln::perf {

namespace {

class StreamCopyCase : public Case {
 public:
  StreamCopyCase(int64_t n, Device d)
      : device_(d), x_(ramp_input(n, -1.0f, 1.0f, d)), y_(zeros({n}, TensorOptions().device(d))) {}
  void run() override {
    if (device_.is_cpu()) {
      stream_copy(y_.mutable_data_ptr<float>(), x_.data_ptr<float>(), x_.numel());
      return;
    }
    copy_bytes(device_, y_.impl()->data(), device_, x_.impl()->data(),
               static_cast<size_t>(x_.numel()) * sizeof(float));
  }
  void check() const override {
    const Tensor xh = on_host(x_), yh = on_host(y_);
    const float* x = xh.data_ptr<float>();
    const float* y = yh.data_ptr<float>();
    for (int64_t i = 0; i < x_.numel(); ++i)
      KILN_CHECK(x[i] == y[i], "ceiling: streaming copy element {} is {}, expected {}", i, y[i],
                 x[i]);
  }

 private:
  Device device_;
  Tensor x_, y_;
};

}  // namespace

Workload ceiling_workload() {
  Workload w{"ceiling",
             "the better of copy_ and a streaming copy (non-temporal stores), 2^26 float32: the "
             "ceiling copy_fraction is against",
             "",
             [](Size size, Device d) {
               int64_t n = size == Size::Small ? (int64_t{1} << 24) : (int64_t{1} << 26);
               Prepared p;
               p.c = std::make_unique<StreamCopyCase>(n, d);
               p.shape = fmt::format("{} float32", size == Size::Small ? "2^24" : "2^26");
               p.bytes = 2.0 * 4.0 * static_cast<double>(n);
               return p;
             },
             true};
  w.fixed_mode = "native";
  w.cuda = true;
  return w;
}

}  // namespace kiln::perf
