// The peer entry points of a kiln-perf built without KILN_WITH_LIBTORCH: no libtorch workloads.
// plan() turns a request for mode libtorch into a usage error that says how to build it.
#include <stdexcept>

#include "perf/peers/peer.h"

namespace kiln::perf::peer {

bool libtorch_built() { return false; }
std::string libtorch_version() { return {}; }
bool libtorch_has(const std::string&) { return false; }
PeerPrepared libtorch_prepare(const std::string& workload, bool, int) {
  throw std::logic_error("kiln-perf: no libtorch peer for " + workload + " in this build");
}

}  // namespace kiln::perf::peer
