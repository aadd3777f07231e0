// exp, expm1, log, log1p for float and double, written once over a lane backend O (vec_ops.h).
//
// exp(x): k = round(x*log2(e)); r = (x - k*ln2_hi) - k*ln2_lo (Cody-Waite: k*ln2_hi and the
//   subtraction are exact, |r| <= ln2/2); exp(r) = 1 + (r + r^2*q(r)) with q a minimax polynomial
//   of degree 4 (float) / 10 (double) for (e^r - 1 - r)/r^2; the result is scaled by 2^k in two
//   exact steps (scale2), so it underflows gradually through the denormals and overflows to inf
//   at the libm threshold. x is first clamped to [-104, 89] (float) / [-746, 710] (double) with a
//   NaN-preserving compare + select: -inf -> +0, +inf -> inf, NaN -> NaN.
// expm1(x): the same reduction (x clamped to [-18, 89] / [-40, 710]: below, the result is -1);
//   e^r - 1 = r + r^2*q(r) (no cancellation), then (em1(r) + (1 - 2^-k)) * 2^k with 2^k applied in
//   two exact steps. k = 0 gives em1(r) itself: full relative accuracy near 0; expm1(+-0) = +-0.
// log(x): denormals are scaled by 2^24 / 2^54 first; x = 2^e * m with m in [sqrt(1/2), sqrt(2))
//   taken from the bits (offset trick, logical shifts only; e converted to float exactly with the
//   2^23 / 2^52 bit trick); f = m - 1 (exact), s = f/(2+f) (the one division), z = s^2,
//   log(1+f) = f - f^2/2 + s*(f^2/2 + z*P(z)) with P a minimax polynomial of degree 3 / 7 for
//   (2*atanh(s)/s - 2)/z; + e*ln2 in two parts. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf,
//   NaN -> NaN.
// log1p(x): u = 1 + x and its exact rounding error c (Fast2Sum); u = 2^e*m as in log, and
//   f + c*2^-e in place of f (for e = 0 this is x itself, exactly), so small x keep full relative
//   accuracy; log1p(+-0) = +-0, log1p(-1) = -inf, log1p(x < -1) = NaN.
//
// Measured max error (tests/test_vecmath_ulp.cpp: every 1021st float32 bit pattern, 2^21 float64
// samples, half log-uniform over every exponent; against a long double reference):
//   exp    float32 0.99 ulp   float64 0.94 ulp   (bound 1.5)
//   expm1  float32 1.55 ulp   float64 1.76 ulp   (bound 2.5)
//   log    float32 0.76 ulp   float64 0.75 ulp   (bound 1.5)
//   log1p  float32 1.33 ulp   float64 1.35 ulp   (bound 2)
// (with the fused multiply-adds of the reductions and polynomials, since 2026-12-01)
// (the bounds asserted by the test are in kUlpBound in tests/test_vecmath_ulp.cpp).
#pragma once
#include "ops/cpu/vecmath/common.h"

namespace kiln::vecmath {

namespace detail {

template <class T>
struct ExpC;
template <>
struct ExpC<float> {
  static constexpr double kLo = -104.0, kHi = 89.0;    // exp(-104) < 2^-150, exp(89) > FLT_MAX
  static constexpr double kM1Lo = -18.0;               // expm1(x < -17.4) rounds to -1
  static constexpr double kLn2Hi = 0.693145751953125;  // 15 significant bits
  static constexpr double kLn2Lo = 1.428606765330187e-06;
  static constexpr double kQ[] = {0.5, 0.1666657338190084602312976, 0.0416665501103051244435877,
                                  0.008363773874405573498848569, 0.001392692661402190648099078};
};
template <>
struct ExpC<double> {
  static constexpr double kLo = -746.0, kHi = 710.0;
  static constexpr double kM1Lo = -40.0;
  static constexpr double kLn2Hi = 0.6931471806019545;  // 32 significant bits
  static constexpr double kLn2Lo = -4.2009150726810846e-11;
  static constexpr double kQ[] = {0.5,
                                  0.1666666666666667143841611,
                                  0.04166666666666667007437566,
                                  0.00833333333332554469956261,
                                  0.00138888888888833266743687,
                                  0.0001984126987686435492946973,
                                  0.00002480158732700718673101561,
                                  0.000002755725283351690974812657,
                                  0.0000002755727181021979956946633,
                                  2.510627473357329468825298e-8,
                                  2.091544229778011521684555e-9};
};
constexpr double kLog2e = 1.44269504088896340736;

template <class T>
struct LogC;
template <>
struct LogC<float> {
  static constexpr int64_t kOffset = 0x3f800000 - 0x3f3504f3;  // 1.0 minus sqrt(1/2), in bits
  static constexpr int64_t kSqrtHalf = 0x3f3504f3;
  static constexpr double kLn2Hi = 0.693145751953125;
  static constexpr double kLn2Lo = 1.428606765330187e-06;
  static constexpr double kP[] = {0.6666666654512713223282644, 0.4000012942695625860524669,
                                  0.2854996859130846944136508, 0.2335342760365118509919951};
};
template <>
struct LogC<double> {
  static constexpr int64_t kOffset = 0x3ff0000000000000 - 0x3fe6a09e667f3bcd;
  static constexpr int64_t kSqrtHalf = 0x3fe6a09e667f3bcd;
  static constexpr double kLn2Hi = 0.6931471806019545;
  static constexpr double kLn2Lo = -4.2009150726810846e-11;
  static constexpr double kP[] = {0.6666666666666666642979356, 0.4000000000000100956901666,
                                  0.2857142857072324927351492, 0.2222222240975011408624637,
                                  0.181817937321117540698548,  0.1538634244964514425013575,
                                  0.1326604881220300222465934, 0.1311483486959749852041009};
};

// k and r of the exp reduction for an already clamped x.
template <class O, class F = typename O::F>
inline Rounded<O> exp_reduce(const O& o, F x, F& r) {
  using C = ExpC<typename O::T>;
  const Rounded<O> k = round_small(o, o.mul(x, o.splat(kLog2e)));  // |x log2 e| < 1100
  r = o.fma(k.f, o.splat(-C::kLn2Lo), o.fma(k.f, o.splat(-C::kLn2Hi), x));
  return k;
}
// e^r - 1 for |r| <= ln2/2.
template <class O, class F = typename O::F>
inline F expm1_poly(const O& o, F r) {
  using C = ExpC<typename O::T>;
  return o.fma(o.mul(r, r), horner(o, r, C::kQ), r);
}

// The exponent (as a float) and the reduced mantissa m - 1 of a finite positive x (normal).
template <class O, class F = typename O::F>
inline F log_split(const O& o, F x, F& e) {
  using T = typename O::T;
  using C = LogC<T>;
  const typename O::I ix = o.iadd(o.as_int(x), o.isplat(C::kOffset));
  const typename O::I n = o.shr(ix, Fmt<T>::kMant);  // e + bias
  e = o.sub(o.as_float(o.iadd(n, o.isplat(Fmt<T>::kTwoPMantBits))),
            o.splat(Fmt<T>::kTwoPMant + double(Fmt<T>::kBias)));
  const int hi = int(sizeof(T) * 8) - Fmt<T>::kMant;
  const typename O::I mant = o.shr(o.shl(ix, hi), hi);
  return o.sub(o.as_float(o.iadd(mant, o.isplat(C::kSqrtHalf))), o.splat(1.0));
}
// log(2^e * (1 + f)) for f in about [sqrt(1/2) - 1, sqrt(2) - 1].
template <class O, class F = typename O::F>
inline F log_core(const O& o, F f, F e) {
  using C = LogC<typename O::T>;
  const F hfsq = o.mul(o.splat(0.5), o.mul(f, f));
  const F s = o.div(f, o.add(o.splat(2.0), f));
  const F z = o.mul(s, s);
  const F R = o.mul(z, horner(o, z, C::kP));
  F r = o.fma(s, o.add(hfsq, R), o.mul(e, o.splat(C::kLn2Lo)));
  r = o.add(o.sub(r, hfsq), f);
  return o.fma(e, o.splat(C::kLn2Hi), r);  // e * ln2hi is exact
}

}  // namespace detail

// exp(x). kZeroBelowLo: the lanes below kLo (where exp rounds to +0: -inf, a softmax's masked
// scores) compute exp(0) and are zeroed at the end, instead of computing exp(kLo), whose last
// product underflows. On Intel cores (FTZ off) a vector with an underflowing lane takes a
// microcode assist: exp of -inf ran 3.5x slower than exp of 0 (eager, Emerald Rapids), a causal
// attention's softmax 3x. The same bits either way (exp(kLo) rounds to +0 too); it costs a
// compare and two single-uop masks where the clamp was one instruction (~5% of a softmax row
// kernel in L1; on AVX-512 the JIT folds the masks into the clamp and the last step, below, and
// pays the compare), so callers ask for it where -inf is expected: the softmax-family
// reductions, and JIT exps of a select of -inf or of `x - max(x)` (jit/cpu/math.h
// exp_input_may_be_masked). Subnormal results (kLo < x < -87.3 for float) still underflow, as
// they must.
template <bool kZeroBelowLo = false, class O, class F = typename O::F>
inline F exp(const O& o, F x) {
  using C = detail::ExpC<typename O::T>;
  typename O::M keep{};
  if constexpr (kZeroBelowLo) {
    keep = o.nlt(x, o.splat(C::kLo));  // x >= kLo, or NaN
    // Optional backend hooks (the JIT's AVX-512 emitter) fold the masks into the clamp and the
    // last step as zero-masked instructions. The same lanes: keep(m, min(hi, x)) is min(hi,
    // keep(m, x)) (min(hi, +0) = +0), and keep(m, x * 2^k) zeroes what the last keep zeroes.
    F clamped;
    bool fused = false;
    if constexpr (requires(F out) { o.keep_lt_select(keep, x, x, out); })
      fused = o.keep_lt_select(keep, o.splat(C::kHi), x, clamped);
    x = fused ? clamped : clamp_hi(o, o.keep(keep, x), C::kHi);
  } else {
    x = clamp_hi(o, clamp_lo(o, x, C::kLo), C::kHi);
  }
  F r;
  const Rounded<O> k = detail::exp_reduce(o, x, r);
  const F p = o.add(o.splat(1.0), detail::expm1_poly(o, r));
  if constexpr (kZeroBelowLo) {
    if constexpr (requires(F out) { o.scale2_rounded_keep(keep, p, k.f, out); }) {
      F out;
      if (o.scale2_rounded_keep(keep, p, k.f, out)) return out;
    }
    return o.keep(keep, scale2(o, p, k));
  } else {
    return scale2(o, p, k);
  }
}

template <class O, class F = typename O::F>
inline F expm1(const O& o, F x) {
  using C = detail::ExpC<typename O::T>;
  const F xc = clamp_hi(o, clamp_lo(o, x, C::kM1Lo), C::kHi);
  F r;
  const Rounded<O> k = detail::exp_reduce(o, xc, r);
  const F em1 = detail::expm1_poly(o, r);
  const typename O::I k1 = round_int(o, o.mul(k.f, o.splat(0.5))).i(o);
  const typename O::I k2 = o.isub(k.i(o), k1);
  const typename O::I zero = o.isplat(0);
  const F inv = o.mul(pow2i(o, o.isub(zero, k1)), pow2i(o, o.isub(zero, k2)));  // 2^-k
  F t = o.add(em1, o.sub(o.splat(1.0), inv));
  t = o.mul(o.mul(t, pow2i(o, k1)), pow2i(o, k2));
  return o.select(o.eq(x, o.splat(0.0)), x, t);
}

template <class O, class F = typename O::F>
inline F log(const O& o, F x) {
  using T = typename O::T;
  const typename O::M tiny = o.lt(x, o.splat(Fmt<T>::kMinNormal));
  const F xs = o.select(tiny, o.mul(x, o.splat(double(int64_t(1) << Fmt<T>::kDenormScale))), x);
  F e;
  const F f = detail::log_split(o, xs, e);
  e = o.sub(e, o.select(tiny, o.splat(Fmt<T>::kDenormScale), o.splat(0.0)));
  F r = detail::log_core(o, f, e);
  r = o.select(o.eq(x, o.splat(kInf)), x, r);
  r = o.select(o.eq(x, o.splat(0.0)), o.splat(-kInf), r);
  r = o.select(o.lt(x, o.splat(0.0)), o.splat(kNaN), r);
  return o.select(o.unord(x, x), x, r);
}

template <class O, class F = typename O::F>
inline F log1p(const O& o, F x) {
  using T = typename O::T;
  const F one = o.splat(1.0);
  const F u = o.add(one, x);
  // The rounding error of 1 + x (Fast2Sum with the larger operand first).
  const F c = o.select(o.lt(vabs(o, x), one), o.sub(x, o.sub(u, one)), o.sub(one, o.sub(u, x)));
  F e;
  const F f = detail::log_split(o, u, e);
  // c * 2^-e; garbage for huge or special u, where it is not used.
  const typename O::I n =
      o.shr(o.iadd(o.as_int(u), o.isplat(detail::LogC<T>::kOffset)), Fmt<T>::kMant);
  const F inv = o.as_float(o.shl(o.isub(o.isplat(2 * Fmt<T>::kBias), n), Fmt<T>::kMant));
  const F big = o.splat(double(int64_t(1) << (Fmt<T>::kMant + 1)));
  const F cs = o.select(o.lt(x, big), o.mul(c, inv), o.splat(0.0));
  F r = detail::log_core(o, o.add(f, cs), e);
  r = o.select(o.eq(x, o.splat(kInf)), x, r);
  r = o.select(o.eq(x, o.splat(-1.0)), o.splat(-kInf), r);
  r = o.select(o.lt(x, o.splat(-1.0)), o.splat(kNaN), r);
  r = o.select(o.eq(x, o.splat(0.0)), x, r);
  return o.select(o.unord(x, x), x, r);
}

}  // namespace kiln::vecmath
