// Timing helpers of the cycle-counting tools (kiln-jit-cycles, kiln-jit-row-cycles): the
// time-stamp counter's rate, and the fewest TSC ticks of many runs of a call (the undisturbed
// cost, with its data in cache).
#pragma once
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace kiln::perf {

// TSC ticks per nanosecond, from a 50 ms interval.
inline double tsc_ticks_per_ns() {
  const auto w0 = std::chrono::steady_clock::now();
  const uint64_t c0 = __rdtsc();
  while (std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(50)) {
  }
  return double(__rdtsc() - c0) /
         std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - w0).count();
}

// The fewest TSC ticks of `trials` calls of `fn`.
template <class Fn>
uint64_t min_tsc_ticks(int trials, Fn&& fn) {
  uint64_t best = ~uint64_t{0};
  for (int t = 0; t < trials; ++t) {
    const uint64_t t0 = __rdtsc();
    fn();
    best = std::min<uint64_t>(best, __rdtsc() - t0);
  }
  return best;
}

}  // namespace kiln::perf
