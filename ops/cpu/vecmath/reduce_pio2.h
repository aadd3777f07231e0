// Exact reduction of a huge argument modulo pi/2 (Payne-Hanek), in scalar integer arithmetic:
// the lanes of sin/cos (sin_cos.h) past the range of their Cody-Waite reduction come here one by
// one (GnuVecOps::reduce_pio2_huge), so that sin and cos keep their ulp bound over the whole
// range. Integer code plus one long double product (x87, the same on every ISA path): the same
// bits whatever the vector width or ISA.
//
// x = M 2^(E-52) (M the 53-bit integer significand). x * 2/pi mod 4 needs the bits of 2/pi from
// 2^-(E-55) on (earlier ones give multiples of 4): 192 of them, times M, is a 245-bit integer R
// with x * 2/pi = R 2^-188 + (error < 2^-135). Its bits 188-189 are the quadrant, the 188 below
// the fraction, rounded to the nearest quadrant (fraction in [-1/2, 1/2)); r = fraction * pi/2.
// The fraction keeps 124 + 64 bits: the double nearest a multiple of pi/2 has |r| ~ 2^-61, so r
// has more than 60 significant bits everywhere before its final rounding to double.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln::vecmath {

namespace detail {

// The binary digits of 2/pi, 64 per word, after one word of zeros (the bits of weight >= 1):
// bit i of the fraction (weight 2^-i) is bit 63 - (i + 63) % 64 of word (i + 63) / 64.
inline constexpr uint64_t kTwoOverPiBits[] = {
    0x0000000000000000ULL, 0xA2F9836E4E441529ULL, 0xFC2757D1F534DDC0ULL, 0xDB6295993C439041ULL,
    0xFE5163ABDEBBC561ULL, 0xB7246E3A424DD2E0ULL, 0x06492EEA09D1921CULL, 0xFE1DEB1CB129A73EULL,
    0xE88235F52EBB4484ULL, 0xE99C7026B45F7E41ULL, 0x3991D639835339F4ULL, 0x9C845F8BBDF9283BULL,
    0x1FF897FFDE05980FULL, 0xEF2F118B5A0A6D1FULL, 0x6D367ECF27CB09B7ULL, 0x4F463F669E5FEA2DULL,
    0x7527BAC7EBE5F17BULL, 0x3D0739F78A5292EAULL, 0x6BFB5FB11F8D5D08ULL, 0x56033046FC7B6BABULL};

// 64 bits of 2/pi from position p (0-based, from the top of word 0).
inline uint64_t two_over_pi_bits(int p) {
  const int k = p / 64, sh = p % 64;
  const uint64_t hi = kTwoOverPiBits[k] << sh;
  return sh ? hi | (kTwoOverPiBits[k + 1] >> (64 - sh)) : hi;
}

}  // namespace detail

// r and q with x = q pi/2 + r, |r| <= pi/4 (r rounded to double, q mod 4), for a finite x with
// |x| >= 2^-8 (smaller ones would read before the table; sin/cos use it past 6000 / 1.5e6).
inline void reduce_pio2_huge(double x, double& r, int& q) {
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  const int e = int((bits >> 52) & 0x7ff) - 1023;
  const uint64_t m = (bits & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);
  const int p0 = e - 55 + 63;  // window of 192 bits from 2^-(e-55)
  const uint64_t w2 = detail::two_over_pi_bits(p0), w1 = detail::two_over_pi_bits(p0 + 64),
                 w0 = detail::two_over_pi_bits(p0 + 128);
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

}  // namespace kiln::vecmath
