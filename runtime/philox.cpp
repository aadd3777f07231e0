#include "runtime/philox.h"

#include <atomic>

namespace kiln {

namespace {
std::atomic<uint64_t> g_seed{67280421310721ull};
std::atomic<uint64_t> g_offset{0};

// This thread's replay state while a PhiloxReplayGuard is alive.
thread_local bool t_replaying = false;
thread_local PhiloxState t_replay;
}  // namespace

void manual_seed(uint64_t seed) {
  g_seed.store(seed);
  g_offset.store(0);
}

uint64_t current_seed() { return t_replaying ? t_replay.seed : g_seed.load(); }

uint64_t reserve_philox_offsets(uint64_t count) {
  if (t_replaying) {
    uint64_t first = t_replay.offset;
    t_replay.offset += count;
    return first;
  }
  return g_offset.fetch_add(count);
}

PhiloxState philox_state() {
  return t_replaying ? t_replay : PhiloxState{g_seed.load(), g_offset.load()};
}

PhiloxReplayGuard::PhiloxReplayGuard(PhiloxState state) : had_prev_(t_replaying), prev_(t_replay) {
  t_replaying = true;
  t_replay = state;
}

PhiloxReplayGuard::~PhiloxReplayGuard() {
  t_replaying = had_prev_;
  t_replay = prev_;
}

}  // namespace kiln
