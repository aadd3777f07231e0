// kiln-perf's workload interface. A workload prepares one Case for a size and a device; the runner
// (perf/runner.cpp) times Case::run() and turns bytes/ops into GB/s and µs per op.
// Workloads are listed explicitly in perf/workloads/registry.cpp (no static self-registration).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::perf {

enum class Size { Small, Default };  // small: quick runs for the README table and CI

// One prepared instance: inputs allocated, outputs ready to be (re)written.
class Case {
 public:
  virtual ~Case() = default;
  // One repetition. Results must be complete when it returns (the runner also calls kiln::sync()).
  virtual void run() = 0;
  // Checks the last run's result against a scalar reference; raises kiln::Error when it is wrong,
  // so that a fast but broken kernel never produces a figure.
  virtual void check() const {}
};

struct Prepared {
  std::unique_ptr<Case> c;
  std::string shape;  // human-readable size, e.g. "2^26 float32"
  double bytes = 0;   // bytes an ideal kernel reads + writes per run (0: GB/s does not apply)
  double ops = 0;     // ops per run for a per-op figure (0: does not apply)
};

// Prepares a row-wise case over [rows, 1024] float32 (8192 rows, 2048 small) whose GB/s counts one
// read and one write of the matrix: the shared setup of the layernorm and softmax workloads.
template <class RowCase>
Prepared prepare_rowwise(Size size, Device device) {
  int64_t rows = size == Size::Small ? 2048 : 8192, cols = 1024;
  Prepared p;
  p.c = std::make_unique<RowCase>(rows, cols, device);
  p.shape = fmt::format("{}x{} float32", rows, cols);
  p.bytes = 2.0 * 4.0 * static_cast<double>(rows * cols);
  return p;
}

struct Workload {
  std::string name;
  std::string what;         // one line for --list
  std::string unavailable;  // empty when it runs; otherwise what it still needs
  std::function<Prepared(Size, Device)> prepare;
  bool reports_gbps = false;  // its figure has GB/s, so it wants the same run's copy and ceiling
  // A workload measured at several values of one parameter (compile_layers: "layers"), one
  // figure per value, each prepared by prepare_at; param_name empty: measured once by prepare.
  std::string param_name{};
  std::function<std::vector<int64_t>(Size)> param_values{};
  std::function<Prepared(Size, Device, int64_t)> prepare_at{};
  // A summary of the other figures of the run rather than runs of its own (compile_latency: the
  // first-call times); main() prints it after the table.
  bool summary = false;
  // Runs once per device in this mode whatever --modes says (ceiling: "native", plain C++ that
  // no kiln mode changes); empty: once per selected mode.
  std::string fixed_mode{};
  // Also runs on CUDA devices (--devices cuda): its prepare() puts the inputs on the Device it is
  // given, and its check() reads results through to(kCPU). The others run on the CPU only.
  bool cuda = false;
};

// Every workload BENCHMARKS.md names, available or not, in its table's order.
const std::vector<Workload>& workloads();
const Workload* find_workload(const std::string& name);

// Workload factories (one file each under perf/workloads/).
Workload copy_workload();
Workload ceiling_workload();
Workload gelu_workload();
Workload layernorm_workload();
Workload loss_workload();
Workload xent_workload();
Workload softmax_workload();
Workload colsum_workload();
Workload batchnorm_workload();
Workload mlp_train_workload();
Workload block_workload();
Workload dispatch_workload();
Workload rnn_loop_workload();
Workload rnn_scan_workload();
Workload newton_workload();
Workload host_loop_workload();
Workload compile_layers_workload();

// A deterministic float32 input of n elements with values in [lo, hi) (no RNG op needed), on
// `device`.
Tensor ramp_input(int64_t n, float lo, float hi, Device device = Device::cpu());

// `t` on the CPU, for a check() (the tensor itself when it is there already).
inline Tensor on_host(const Tensor& t) { return t.to(Device::cpu()); }

}  // namespace kiln::perf
