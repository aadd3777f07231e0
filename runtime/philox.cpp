#include "runtime/philox.h"

#include <atomic>

namespace kiln {

namespace {
std::atomic<uint64_t> g_seed{67280421310721ull};
std::atomic<uint64_t> g_offset{0};
}  // namespace

void manual_seed(uint64_t seed) {
  g_seed.store(seed);
  g_offset.store(0);
}

uint64_t current_seed() { return g_seed.load(); }

uint64_t reserve_philox_offsets(uint64_t count) { return g_offset.fetch_add(count); }

}  // namespace kiln
