// The libtorch peer registry: which workloads have a libtorch version, and the thread setting of
// a run (at::set_num_threads for libtorch's OpenMP pool and the same count for the OpenBLAS that
// libtorch and kiln share: libtorch's set_num_threads leaves OpenBLAS alone, and kiln sets it per
// matmul, so a peer run would otherwise get whatever the last kiln matmul left).
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <cmath>
#include <map>
#include <vector>

#include "perf/peers/libtorch_cases.h"

extern "C" void openblas_set_num_threads(int);  // the OpenBLAS that libtorch links (Debian)

namespace kiln::perf::peer {

namespace {

using Factory = PeerPrepared (*)(bool);

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> all = {
      {"copy", torch_copy},
      {"gelu", torch_gelu},
      {"layernorm", torch_layernorm},
      {"softmax", torch_softmax},
      {"dispatch", torch_dispatch},
      {"mlp_train", torch_mlp_train},
      {"block", torch_block},
      {"rnn_loop", torch_rnn_loop},
      {"newton", torch_newton},
      // libtorch 1.13 has no scan: its form of rnn_scan is the host loop of rnn_loop, the same
      // RNN a libtorch user writes. No peer for compile_layers (no regions: its figure is the
      // first call of a compiled region) or compile_latency (a summary of the others).
      {"rnn_scan", torch_rnn_loop},
  };
  return all;
}

}  // namespace

bool libtorch_built() { return true; }
std::string libtorch_version() { return TORCH_VERSION; }

bool libtorch_has(const std::string& workload) { return factories().count(workload) > 0; }

PeerPrepared libtorch_prepare(const std::string& workload, bool small, int threads) {
  auto it = factories().find(workload);
  if (it == factories().end())
    throw std::logic_error("kiln-perf: no libtorch peer for " + workload);
  at::set_num_threads(threads);
  openblas_set_num_threads(threads);
  return it->second(small);
}

at::Tensor torch_ramp(int64_t n, float lo, float hi) {
  at::Tensor t = at::empty({n}, at::kFloat);
  float* v = t.data_ptr<float>();
  const double phi = 0.6180339887498949;
  for (int64_t i = 0; i < n; ++i) {
    double f = static_cast<double>(i) * phi;
    v[i] = lo + (hi - lo) * static_cast<float>(f - std::floor(f));
  }
  return t;
}

void check_failed(const std::string& message) { throw std::runtime_error(message); }

}  // namespace kiln::perf::peer
