// kiln-perf's peer interface: the same workloads written against another library (libtorch) and run
// in the same process, so kiln's eager figures have a side-by-side reference. This header includes
// neither kiln nor torch: the peers live in their own translation units (libtorch_*.cpp, built only
// with KILN_WITH_LIBTORCH; no_libtorch.cpp otherwise), and the runner wraps a PeerCase into a Case.
#pragma once
#include <memory>
#include <string>

namespace kiln::perf::peer {

// One prepared instance, as perf::Case: run() is timed, check() raises std::runtime_error when the
// first run's result is wrong.
class PeerCase {
 public:
  virtual ~PeerCase() = default;
  virtual void run() = 0;
  virtual void check() const {}
};

struct PeerPrepared {
  std::unique_ptr<PeerCase> c;
  std::string shape;  // the same spelling as the kiln workload's
  double bytes = 0;   // as perf::Prepared
  double ops = 0;
};

// Whether this kiln-perf was built with KILN_WITH_LIBTORCH.
bool libtorch_built();
// "1.13.0" (TORCH_VERSION); empty when not built.
std::string libtorch_version();
// Whether the workload has a libtorch version.
bool libtorch_has(const std::string& workload);
// Prepares the libtorch version of a workload at kiln-perf's sizes (small: --size small), after
// at::set_num_threads(threads) and openblas_set_num_threads(threads) (kiln-perf runs each peer at
// 1 thread and at kiln's thread count). Only for workloads libtorch_has().
PeerPrepared libtorch_prepare(const std::string& workload, bool small, int threads);

}  // namespace kiln::perf::peer
