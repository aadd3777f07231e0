// Shared pieces of the libtorch peers (built only with KILN_WITH_LIBTORCH). Includes ATen, never
// kiln: kiln and torch code stay in separate translation units.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "perf/peers/peer.h"

namespace kiln::perf::peer {

// kiln-perf's ramp_input (perf/workloads/registry.cpp), same values: lo + (hi - lo) * frac(i *
// phi).
at::Tensor torch_ramp(int64_t n, float lo, float hi);

// Raises the std::runtime_error that a failed check() reports.
[[noreturn]] void check_failed(const std::string& message);

// One factory per workload, same sizes as kiln's (small: --size small).
PeerPrepared torch_copy(bool small);
PeerPrepared torch_gelu(bool small);
PeerPrepared torch_layernorm(bool small);
PeerPrepared torch_softmax(bool small);
PeerPrepared torch_dispatch(bool small);
PeerPrepared torch_mlp_train(bool small);
PeerPrepared torch_block(bool small);
PeerPrepared torch_rnn_loop(bool small);
PeerPrepared torch_newton(bool small);

}  // namespace kiln::perf::peer
