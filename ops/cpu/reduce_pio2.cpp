// The exact reduction modulo pi/2 of ops/cpu/vecmath/reduce_pio2.h (see its contract), compiled
// once, in the baseline library: the per-ISA kernel objects call it, never copy it.
#include "ops/cpu/vecmath/reduce_pio2.h"

#include <cmath>
#include <cstring>

namespace kiln::vecmath {

namespace {

// The binary digits of 2/pi, 64 per word, after one word of zeros (the bits of weight >= 1):
// bit i of the fraction (weight 2^-i) is bit 63 - (i + 63) % 64 of word (i + 63) / 64.
constexpr uint64_t kTwoOverPiBits[] = {
    0x0000000000000000ULL, 0xA2F9836E4E441529ULL, 0xFC2757D1F534DDC0ULL, 0xDB6295993C439041ULL,
    0xFE5163ABDEBBC561ULL, 0xB7246E3A424DD2E0ULL, 0x06492EEA09D1921CULL, 0xFE1DEB1CB129A73EULL,
    0xE88235F52EBB4484ULL, 0xE99C7026B45F7E41ULL, 0x3991D639835339F4ULL, 0x9C845F8BBDF9283BULL,
    0x1FF897FFDE05980FULL, 0xEF2F118B5A0A6D1FULL, 0x6D367ECF27CB09B7ULL, 0x4F463F669E5FEA2DULL,
    0x7527BAC7EBE5F17BULL, 0x3D0739F78A5292EAULL, 0x6BFB5FB11F8D5D08ULL, 0x56033046FC7B6BABULL};

// 64 bits of 2/pi from position p (0-based, from the top of word 0).
uint64_t two_over_pi_bits(int p) {
  const int k = p / 64, sh = p % 64;
  const uint64_t hi = kTwoOverPiBits[k] << sh;
  return sh ? hi | (kTwoOverPiBits[k + 1] >> (64 - sh)) : hi;
}

}  // namespace

void reduce_pio2_huge(double x, double& r, int& q) {
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  const int e = int((bits >> 52) & 0x7ff) - 1023;
  const uint64_t m = (bits & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);
  const int p0 = e - 55 + 63;  // window of 192 bits from 2^-(e-55)
  const uint64_t w2 = two_over_pi_bits(p0), w1 = two_over_pi_bits(p0 + 64),
                 w0 = two_over_pi_bits(p0 + 128);
  using U128 = unsigned __int128;
  const U128 p_0 = U128(m) * w0, p_1 = U128(m) * w1, p_2 = U128(m) * w2;
  // R = p_2 2^128 + p_1 2^64 + p_0; r0..r2 its low three words (r3 only holds multiples of 4).
  const uint64_t r0 = uint64_t(p_0);
  const U128 s1 = (p_0 >> 64) + uint64_t(p_1);
  const uint64_t r1 = uint64_t(s1);
  const U128 s2 = (s1 >> 64) + (p_1 >> 64) + uint64_t(p_2);
  const uint64_t r2 = uint64_t(s2);
  q = int((r2 >> 60) & 3);
  // The fraction's top 124 bits as a signed integer, rounded to the nearest quadrant.
  __int128 f = (__int128((r2 & ((uint64_t(1) << 60) - 1))) << 64) | r1;
  long double low = static_cast<long double>(r0);
  if (r2 & (uint64_t(1) << 59)) {
    q = (q + 1) & 3;
    f -= __int128(1) << 124;
  }
  const long double frac = std::ldexp(static_cast<long double>(f), -124) + std::ldexp(low, -188);
  const long double rl = frac * 1.570796326794896619231321691639751442L;
  r = static_cast<double>(rl);
  if (x < 0) r = -r, q = (4 - q) & 3;
}

namespace {

template <class T, class IT>
void lanes_impl(const T* x, int n, double bound, T* r, IT* k) {
  for (int i = 0; i < n; ++i) {
    if (!(std::fabs(x[i]) > T(bound)) || std::isinf(x[i])) continue;
    double rd;
    int q;
    reduce_pio2_huge(double(x[i]), rd, q);
    r[i] = static_cast<T>(rd);
    k[i] = static_cast<IT>(q);
  }
}

}  // namespace

void reduce_pio2_huge_lanes(const float* x, int n, double bound, float* r, int32_t* k) {
  lanes_impl(x, n, bound, r, k);
}
void reduce_pio2_huge_lanes(const double* x, int n, double bound, double* r, int64_t* k) {
  lanes_impl(x, n, bound, r, k);
}

}  // namespace kiln::vecmath
