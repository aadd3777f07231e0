// The workload list, in BENCHMARKS.md's order (colsum, loss, xent and batchnorm, which
// BENCHMARKS.md does not list, after the row-wise ones; host_loop, not listed either, after
// newton). A workload whose features have not landed stays listed with Workload::unavailable set,
// so that --list shows the whole suite and selecting it gives a clear error instead of "unknown
// workload" (none today).
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

// compile_latency runs nothing itself: it is the first-call summary of the run's other figures
// (perf/report.cpp). Selected alone, it stands for every available workload.
Workload compile_latency_workload() {
  Workload w{"compile_latency",
             "first call of each selected workload vs its steady state (jit: planning and "
             "compiling included; no disk cache yet); alone: of every workload",
             "", nullptr};
  w.summary = true;
  return w;
}

}  // namespace

const std::vector<Workload>& workloads() {
  // One workload a line, in the table's order.
  // clang-format off
  static const std::vector<Workload> all = {
      copy_workload(),
      ceiling_workload(),
      gelu_workload(),
      layernorm_workload(),
      softmax_workload(),
      colsum_workload(),
      loss_workload(),
      xent_workload(),
      batchnorm_workload(),
      mlp_train_workload(),
      block_workload(),
      rnn_loop_workload(),
      rnn_scan_workload(),
      newton_workload(),
      host_loop_workload(),
      dispatch_workload(),
      compile_layers_workload(),
      compile_latency_workload(),
  };
  // clang-format on
  return all;
}

const Workload* find_workload(const std::string& name) {
  for (const Workload& w : workloads())
    if (w.name == name) return &w;
  return nullptr;
}

Tensor ramp_input(int64_t n, float lo, float hi, Device device) {
  // lo + (hi - lo) * frac(i * golden ratio): spread over the range, not sorted, no RNG needed.
  std::vector<float> v(static_cast<size_t>(n));
  const double phi = 0.6180339887498949;
  for (int64_t i = 0; i < n; ++i) {
    double f = static_cast<double>(i) * phi;
    v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(f - std::floor(f));
  }
  return from_vector<float>(v, {n}).to(device);
}

}  // namespace kiln::perf
