// The workload list. Workloads whose features have not landed are listed too, so --list shows the
// whole suite and selecting one gives a clear error instead of "unknown workload".
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

Workload later(std::string name, std::string what, std::string needs) {
  return Workload{std::move(name), std::move(what), std::move(needs), nullptr};
}

}  // namespace

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = {
      copy_workload(),
      gelu_workload(),
      layernorm_workload(),
      softmax_workload(),
      mlp_train_workload(),
      block_workload(),
      later("rnn_scan", "tanh RNN, T 64, batch 64, hidden 256, as a loop and as scan",
            "it needs the higher-order op scan"),
      later("newton", "Newton iteration for sqrt with while_loop, 2^20 elements",
            "it needs the higher-order op while_loop"),
      dispatch_workload(),
      later("compile_layers", "N identical transformer blocks, first call cold",
            "it needs the JIT and region()"),
      later("compile_latency", "first call of each workload, cold and warm disk cache",
            "it needs the JIT"),
  };
  return all;
}

const Workload* find_workload(const std::string& name) {
  for (const Workload& w : workloads())
    if (w.name == name) return &w;
  return nullptr;
}

Tensor ramp_input(int64_t n, float lo, float hi) {
  // lo + (hi - lo) * frac(i * golden ratio): spread over the range, not sorted, no RNG needed.
  std::vector<float> v(static_cast<size_t>(n));
  const double phi = 0.6180339887498949;
  for (int64_t i = 0; i < n; ++i) {
    double f = static_cast<double>(i) * phi;
    v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(f - std::floor(f));
  }
  return from_vector<float>(v, {n});
}

}  // namespace kiln::perf
