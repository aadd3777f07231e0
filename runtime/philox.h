// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"), the counter-based
// generator behind every random op. A draw is a pure function of (seed, counter), so eager,
// recorded, compiled, CPU and CUDA code produce the same numbers: element i of a random op whose
// offset is `off` uses counter (off + i). See docs/random.md for what each op consumes.
#pragma once
#include <array>
#include <cstdint>

namespace kiln {

struct Philox {
  static constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  static constexpr uint32_t kKey0 = 0x9E3779B9u, kKey1 = 0xBB67AE85u;

  // Four 32-bit outputs for a 64-bit counter under a 64-bit key (the seed).
  static inline std::array<uint32_t, 4> draw(uint64_t seed, uint64_t counter) {
    uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
    uint32_t c2 = 0, c3 = 0;
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
      uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += kKey0;
      k1 += kKey1;
    }
    return {c0, c1, c2, c3};
  }

  // Uniform in [0, 1) from 24 / 53 random bits.
  static inline float uniform_float(uint32_t a) { return (a >> 8) * 0x1.0p-24f; }
  static inline double uniform_double(uint32_t a, uint32_t b) {
    uint64_t bits = (static_cast<uint64_t>(a) << 32 | b) >> 11;
    return static_cast<double>(bits) * 0x1.0p-53;
  }
};

// The process-wide generator state: a seed and the next unused counter.
void manual_seed(uint64_t seed);
uint64_t current_seed();
// Reserves `count` consecutive counters and returns the first (thread-safe).
uint64_t reserve_philox_offsets(uint64_t count);

// Where the next draw on this thread would come from: (current_seed(), next offset).
struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};
PhiloxState philox_state();

// Replays earlier draws on this thread: while alive, current_seed() and reserve_philox_offsets()
// on this thread use `state` and a private counter that starts at state.offset, and leave the
// process-wide state alone (other threads draw as usual). checkpoint's recompute uses it so the
// recomputed body draws exactly the numbers its forward drew. Guards nest.
class PhiloxReplayGuard {
 public:
  explicit PhiloxReplayGuard(PhiloxState state);
  ~PhiloxReplayGuard();
  PhiloxReplayGuard(const PhiloxReplayGuard&) = delete;
  PhiloxReplayGuard& operator=(const PhiloxReplayGuard&) = delete;

 private:
  bool had_prev_;
  PhiloxState prev_;
};

}  // namespace kiln
