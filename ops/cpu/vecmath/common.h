// Helpers shared by the vecmath function families, written only with the primitives of the lane
// contract (vec_ops.h): constants of the float formats, NaN-preserving clamps, rounding to an
// integer with the 1.5*2^p trick, exact powers of two from integer lanes, Horner evaluation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ops/cpu/vecmath/vec_ops.h"

namespace kiln::vecmath {

template <class T>
struct Fmt;
template <>
struct Fmt<float> {
  static constexpr int kMant = 23;
  static constexpr int64_t kBias = 127;
  static constexpr double kRoundMagic = 12582912.0;  // 1.5 * 2^23
  static constexpr int64_t kRoundMagicBits = 0x4B400000;
  static constexpr int64_t kTwoPMantBits = 0x4B000000;  // bits of 2^23
  static constexpr double kTwoPMant = 8388608.0;
  static constexpr double kMinNormal = 1.17549435082228750797e-38;
  static constexpr int kDenormScale = 24;  // denormals are multiplied by 2^24 first
};
template <>
struct Fmt<double> {
  static constexpr int kMant = 52;
  static constexpr int64_t kBias = 1023;
  static constexpr double kRoundMagic = 6755399441055744.0;  // 1.5 * 2^52
  static constexpr int64_t kRoundMagicBits = 0x4338000000000000;
  static constexpr int64_t kTwoPMantBits = 0x4330000000000000;
  static constexpr double kTwoPMant = 4503599627370496.0;
  static constexpr double kMinNormal = 2.22507385850720138309e-308;
  static constexpr int kDenormScale = 54;
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// |x| (clears the sign bit; NaN stays NaN).
template <class O, class F = typename O::F>
inline F vabs(const O& o, F x) {
  return o.bit_andnot(o.splat(-0.0), x);
}
// The sign bit of x (as a float: +0 or -0).
template <class O, class F = typename O::F>
inline F sign_of(const O& o, F x) {
  return o.bit_and(o.splat(-0.0), x);
}
// x > c ? c : x, as c < x ? c : x (one minps); a NaN x stays NaN (the compare is false).
template <class O, class F = typename O::F>
inline F clamp_hi(const O& o, F x, double c) {
  return o.lt_select(o.splat(c), x);
}
// x < c ? c : x, as c > x ? c : x (one maxps); a NaN x stays NaN.
template <class O, class F = typename O::F>
inline F clamp_lo(const O& o, F x, double c) {
  return o.gt_select(o.splat(c), x);
}

// x rounded to the nearest integer (ties to even), as a float and as integer lanes. Valid for
// |x| < 2^22 (float) / 2^51 (double).
// The integer lanes are made on demand (i()): a backend that emits code (the JIT) emits only
// what is read.
template <class O>
struct Rounded {
  typename O::F f;    // the integer, as a float
  typename O::F t;    // x + 1.5 * 2^p: the integer in its low bits (when has_t)
  bool has_t = true;  // false: made by round_small's hook, t is recomputed from f
  typename O::I i(const O& o) const {
    const typename O::F magic = o.splat(Fmt<typename O::T>::kRoundMagic);
    return o.isub(o.as_int(has_t ? t : o.add(f, magic)), o.as_int(magic));
  }
};
template <class O, class F = typename O::F>
inline Rounded<O> round_int(const O& o, F x) {
  using T = typename O::T;
  const F magic = o.splat(Fmt<T>::kRoundMagic);
  const F t = o.add(x, magic);
  return {o.sub(t, magic), t};
}

// round_int for |x| < 2^22 (float) / 2^51 (double) or NaN, where a backend may round in one
// instruction through the optional hook `bool round_small(F x, F& out)` (round to nearest,
// ties to even: the magic trick's integer exactly; false where it cannot, e.g. the JIT
// without AVX-512's vrndscaleps).
template <class O, class F = typename O::F>
inline Rounded<O> round_small(const O& o, F x) {
  if constexpr (requires(F out) { o.round_small(x, out); }) {
    F f;
    if (o.round_small(x, f)) return {f, f, false};
  }
  return round_int(o, x);
}

// 2^k for integer lanes k in [1 - bias, bias].
template <class O, class I = typename O::I>
inline typename O::F pow2i(const O& o, I k) {
  using T = typename O::T;
  return o.as_float(o.shl(o.iadd(k, o.isplat(Fmt<T>::kBias)), Fmt<T>::kMant));
}

// x * 2^k for an integer-valued k (float and integer lanes) in [-2*bias+2, 2*bias], in two
// exact steps so that the only rounding is the final one (gradual underflow, overflow to inf):
// the correctly rounded x * 2^k. A backend may compute that product in one instruction through
// the optional hook `bool scale2_rounded(F x, F kf, F& out)` (kf: k as a float; false where it
// cannot, e.g. the JIT without AVX-512's vscalefps): the same bits, and k.i is not read.
template <class O, class F = typename O::F>
inline F scale2(const O& o, F x, const Rounded<O>& k) {
  if constexpr (requires(F out) { o.scale2_rounded(x, k.f, out); }) {
    F out;
    if (o.scale2_rounded(x, k.f, out)) return out;
  }
  // k = k1 + k2, k1 = floor(k / 2) and k2 = ceil(k / 2), both normal powers of two over the
  // range, taken from the bits of the rounding sum t = k + 1.5 * 2^p (magic + k): with off =
  // 2 * bias + 2, u = (k + off) >> 1 (logical: k + off >= 0) is k1 + off / 2, so k1 + bias =
  // u - 1 and k2 + bias = k - k1 + bias = (t + off / 2 + bias - magic) - u. Seven integer
  // operations where round(k / 2) in floats took nine (2026-11-30); any split into two normal
  // powers gives the same bits: x * 2^k1 is exact, and the second product rounds once.
  using T = typename O::T;
  using I = typename O::I;
  constexpr int64_t off = 2 * Fmt<T>::kBias + 2, magic = Fmt<T>::kRoundMagicBits;
  const I t = o.as_int(k.has_t ? k.t : o.add(k.f, o.splat(Fmt<T>::kRoundMagic)));
  const I u = o.shr(o.iadd(t, o.isplat(off - magic)), 1);
  const F p1 = o.as_float(o.shl(o.iadd(u, o.isplat(Fmt<T>::kBias - off / 2)), Fmt<T>::kMant));
  const F p2 = o.as_float(
      o.shl(o.isub(o.iadd(t, o.isplat(off / 2 + Fmt<T>::kBias - magic)), u), Fmt<T>::kMant));
  return o.mul(o.mul(x, p1), p2);
}

// c[0] + x*(c[1] + x*(c[2] + ...)), Horner with one fused multiply-add per step (c: an array of
// doubles).
template <class O, class C, class F = typename O::F>
inline F horner(const O& o, F x, const C& c) {
  constexpr size_t N = sizeof(C) / sizeof(double);  // a double[N] or std::array<double, N>
  F p = o.splat(c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) p = o.fma(p, x, o.splat(c[i]));
  return p;
}

}  // namespace kiln::vecmath
