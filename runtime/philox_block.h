// Philox draws for four consecutive counters at once: words 0 and 1 of Philox::draw(seed,
// counter + j), j = 0..3, bit for bit, for eager loops that draw per element (rand, dropout).
// SSE2 (every x86-64): the four counters' words sit in 32-bit lanes; each word that is
// multiplied is held as two registers, the even lanes in place and the odd lanes shifted down,
// so that `pmuludq` (which reads the low half of each 64-bit lane) gives the whole product, its
// low word in place and its high word one shift away (the JIT's scheme, jit/cpu/philox_emitter.h).
// The high halves carry garbage no multiply reads; the last round's low halves are joined again.
// Scalar Philox::draw per element ran 33 TSC cycles an element on Zen 1; this runs ~10.
#pragma once
#include <array>
#include <cstdint>

#include "runtime/philox.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kiln {

struct PhiloxWords4 {
  std::array<uint32_t, 4> r0, r1;  // word 0 and word 1 of counters counter .. counter + 3
};

inline PhiloxWords4 philox_draw4(uint64_t seed, uint64_t counter) {
  PhiloxWords4 out;
#if defined(__SSE2__)
  auto lo = [](uint64_t v) { return static_cast<int>(static_cast<uint32_t>(v)); };
  auto hi = [](uint64_t v) { return static_cast<int>(static_cast<uint32_t>(v >> 32)); };
  const __m128i c0 = _mm_set_epi32(lo(counter + 3), lo(counter + 2), lo(counter + 1), lo(counter));
  const __m128i c1 = _mm_set_epi32(hi(counter + 3), hi(counter + 2), hi(counter + 1), hi(counter));
  const __m128i m0 = _mm_set1_epi32(static_cast<int>(Philox::kMul0));
  const __m128i m1 = _mm_set1_epi32(static_cast<int>(Philox::kMul1));
  const __m128i key0 = _mm_set1_epi32(static_cast<int>(Philox::kKey0));
  const __m128i key1 = _mm_set1_epi32(static_cast<int>(Philox::kKey1));
  __m128i k0 = _mm_set1_epi32(lo(seed)), k1 = _mm_set1_epi32(hi(seed));
  // [0]: even lanes, [1]: odd lanes, each word in the low half of a 64-bit lane.
  __m128i w0[2] = {c0, _mm_srli_epi64(c0, 32)}, w1[2] = {c1, _mm_srli_epi64(c1, 32)};
  __m128i w2[2] = {_mm_setzero_si128(), _mm_setzero_si128()}, w3[2] = {w2[0], w2[0]};
  for (int round = 0; round < 10; ++round) {
    for (int h = 0; h < 2; ++h) {
      const __m128i p0 = _mm_mul_epu32(w0[h], m0), p1 = _mm_mul_epu32(w2[h], m1);
      w0[h] = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi64(p1, 32), w1[h]), k0);
      w1[h] = p1;
      w2[h] = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi64(p0, 32), w3[h]), k1);
      w3[h] = p0;
    }
    k0 = _mm_add_epi32(k0, key0);
    k1 = _mm_add_epi32(k1, key1);
  }
  const __m128i low = _mm_set_epi32(0, -1, 0, -1);
  auto join = [&](const __m128i* w) {
    return _mm_or_si128(_mm_and_si128(w[0], low), _mm_slli_epi64(w[1], 32));
  };
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.r0.data()), join(w0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.r1.data()), join(w1));
#else
  for (int j = 0; j < 4; ++j) {
    const std::array<uint32_t, 4> r = Philox::draw(seed, counter + static_cast<uint64_t>(j));
    out.r0[j] = r[0];
    out.r1[j] = r[1];
  }
#endif
  return out;
}

}  // namespace kiln
