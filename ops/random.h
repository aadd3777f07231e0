// How random ops turn Philox draws into numbers (docs/random.md is the full contract; the CUDA
// backend reproduces these functions bit for bit). A random op over n elements reserves n
// consecutive counters at dispatch time; element i (row-major) uses Philox::draw(seed, off + i),
// four 32-bit lanes r[0..3]. Dropout (ops/dropout.cpp) draws random_uniform<T>, keeps iff u >= p.
#pragma once
#include <cmath>
#include <cstdint>

#include "runtime/attrs.h"
#include "runtime/philox.h"
#include "runtime/philox_block.h"

namespace kiln {

// The Attrs layout every random op (kIsRandom) shares, named for the passes and runners that read
// or patch it: ints[0] = the Philox seed, ints[1] = the first counter (both uint64 bit patterns).
inline constexpr size_t kPhiloxSeedInt = 0, kPhiloxCounterInt = 1;
inline uint64_t philox_seed(const Attrs& a) {
  return static_cast<uint64_t>(a.ints[kPhiloxSeedInt]);
}
inline uint64_t philox_counter(const Attrs& a) {
  return static_cast<uint64_t>(a.ints[kPhiloxCounterInt]);
}
inline void set_philox(Attrs& a, uint64_t seed, uint64_t counter) {
  a.ints[kPhiloxSeedInt] = static_cast<int64_t>(seed);
  a.ints[kPhiloxCounterInt] = static_cast<int64_t>(counter);
}

// Uniform in [0, 1): Float32 from lane 0 (24 bits), Float64 from lanes 0, 1 (53 bits).
template <class T>
inline T random_uniform(uint64_t seed, uint64_t counter) {
  auto r = Philox::draw(seed, counter);
  if constexpr (sizeof(T) == 4)
    return Philox::uniform_float(r[0]);
  else
    return Philox::uniform_double(r[0], r[1]);
}

// Calls f(i, random_uniform<T>(seed, counter + i)) for i in [b, e): four counters at a time
// (philox_draw4), the same numbers.
template <class T, class F>
inline void for_each_uniform(uint64_t seed, uint64_t counter, int64_t b, int64_t e, F f) {
  int64_t i = b;
  for (; i + 4 <= e; i += 4) {
    const PhiloxWords4 w = philox_draw4(seed, counter + static_cast<uint64_t>(i));
    for (int j = 0; j < 4; ++j) {
      if constexpr (sizeof(T) == 4)
        f(i + j, Philox::uniform_float(w.r0[j]));
      else
        f(i + j, Philox::uniform_double(w.r0[j], w.r1[j]));
    }
  }
  for (; i < e; ++i) f(i, random_uniform<T>(seed, counter + static_cast<uint64_t>(i)));
}

// Standard normal by Box-Muller, computed in double and rounded to T.
// Float32: u1 = ((r0 >> 8) + 1) * 2^-24 in (0, 1], u2 = (r1 >> 8) * 2^-24 in [0, 1).
// Float64: u1 = (((r0 << 32 | r1) >> 11) + 1) * 2^-53, u2 = ((r2 << 32 | r3) >> 11) * 2^-53.
// z = sqrt(-2 ln u1) * cos(2 pi u2).
template <class T>
inline T random_normal(uint64_t seed, uint64_t counter) {
  auto r = Philox::draw(seed, counter);
  double u1, u2;
  if constexpr (sizeof(T) == 4) {
    u1 = static_cast<double>((r[0] >> 8) + 1) * 0x1.0p-24;
    u2 = static_cast<double>(r[1] >> 8) * 0x1.0p-24;
  } else {
    u1 = static_cast<double>(((static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 11) + 1) * 0x1.0p-53;
    u2 = static_cast<double>((static_cast<uint64_t>(r[2]) << 32 | r[3]) >> 11) * 0x1.0p-53;
  }
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return static_cast<T>(std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2));
}

// Integer in [low, high) (high > low): low + ((r0 << 32 | r1) mod (high - low)), all in uint64
// (two's-complement wrap-around), so ranges up to 2^64 - 1 work.
inline int64_t random_int(uint64_t seed, uint64_t counter, int64_t low, uint64_t range) {
  auto r = Philox::draw(seed, counter);
  uint64_t x = static_cast<uint64_t>(r[0]) << 32 | r[1];
  return static_cast<int64_t>(static_cast<uint64_t>(low) + x % range);
}

void register_random_ops();

}  // namespace kiln
