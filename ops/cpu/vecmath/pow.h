// pow(x, y) for float and double, written once over a lane backend O (vec_ops.h), in T's own
// lanes (float32 needs no double lanes: its extended precision is float-float).
//
// |x|^y = exp(y * log|x|), with log|x| and the product in double-T (double_t.h) so that the
// argument of exp carries about 2p bits: an absolute error d in it is a relative error d in the
// result, and |y log x| reaches 745 (float64) / 104 (float32).
// log|x| (finite, positive; denormals scaled by 2^54 / 2^24 first): |x| = 2^e * m with m in
//   [sqrt(1/2), sqrt(2)) from the bits (as log, exp_log.h), f = m - 1 exact; s = f / (2 + f) in
//   double-T (the division's remainder through an exact product); log m = 2 atanh(s) =
//   2s + s^3 W(s^2), W = 2/3 + z Q(z) with Q the Taylor series of (2 atanh(s)/s - 2 - 2z/3)/z^2
//   (10 / 5 terms: z <= 0.0295); 2s, s^3 and s^3 W in double-T, Q and z Q in T (they are 2^-12
//   of the total); + e ln2 with ln2 in three parts, the first two of p - 11 / p - 8 bits so that
//   e * part is exact.
// t = y * log|x| = th + tl (exact product of y and the high part, plus y * low part).
// exp(th + tl): th clamped to exp's range (NaN-preserving), k = round(th log2 e), r = th - k ln2
//   with the same three-part ln2 (the first subtraction exact by Sterbenz, the second through
//   two_sum), r = rh + rl with tl in rl; e^r = (1 + rh + rh^2 q(rh)) (1 + rl) with q exp's
//   polynomial (exp_log.h) and 1 + rh kept exact (Fast2Sum), so that only the last addition
//   rounds at the result's precision; scaled by 2^k in two exact steps (gradual underflow, overflow
//   to inf).
// The sign and the special cases of IEEE 754 / C99 Annex F, by compare + select:
//   pow(x, +-0) = 1 and pow(1, y) = 1 for every x, y (NaN included);
//   x < 0 finite and y finite non-integer: NaN; otherwise x < 0 (or -0, -inf) gives
//   +-|x|^y, negative iff y is an odd integer (|y| < 2^53 / 2^24);
//   |x| = 0 or inf, or |y| = inf: inf if (|x| < 1 and y < 0) or (|x| > 1 and y > 0), 1 if
//   |x| = 1 (pow(-1, +-inf) = 1), else +0; then the sign rule above (pow(-0, -3) = -inf,
//   pow(-inf, 3) = -inf, pow(-inf, -3) = -0);
//   NaN otherwise propagates; results past the range overflow to inf / underflow to 0.
// y's class comes from the bits: t = |y| + 2^p-1 rounds |y| to an integer when |y| < 2^(p-1);
//   it is one iff t - 2^(p-1) == |y|, and the lowest mantissa bit of t is its parity. An
//   exponent known when the code is written (pow_scalar) has its class computed then, and its
//   kernel carries only the special cases that class leaves.
//
// Measured max error: float32 0.77 ulp, float64 0.75 ulp (bound 1; tests/test_vecmath_ulp.cpp,
// docs/numerics.md).
#pragma once
#include <cmath>

#include "ops/cpu/vecmath/common.h"
#include "ops/cpu/vecmath/double_t.h"
#include "ops/cpu/vecmath/exp_log.h"
#include "ops/cpu/vecmath/known_cond.h"

namespace kiln::vecmath {

namespace detail {

template <class T>
struct PowC;
template <>
struct PowC<float> {
  // ln2 = A + B + C; A and B have 16 significant bits: e * A, e * B exact for |e| < 2^8.
  static constexpr double kLn2A = 0.693145751953125, kLn2B = 1.4285906217992306e-06,
                          kLn2C = 1.619851018665656e-11;
  static constexpr double k23Hi = 0.6666666865348816, k23Lo = -1.9868214925130207e-08;
  static constexpr double kQ[] = {2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13};
};
template <>
struct PowC<double> {
  // A and B have 42 significant bits: e * A, e * B exact for |e| < 2^11.
  static constexpr double kLn2A = 0.6931471805598903, kLn2B = 5.49792301870721e-14,
                          kLn2C = 1.1612227229362532e-26;
  static constexpr double k23Hi = 0.6666666666666666, k23Lo = 3.700743415417188e-17;
  static constexpr double kQ[] = {2.0 / 5,  2.0 / 7,  2.0 / 9,  2.0 / 11, 2.0 / 13,
                                  2.0 / 15, 2.0 / 17, 2.0 / 19, 2.0 / 21, 2.0 / 23};
};

// log(ax) in double-T for a finite ax > 0.
template <class O, class F = typename O::F>
inline DT<O> log_dt(const O& o, F ax) {
  using T = typename O::T;
  using C = PowC<T>;
  const typename O::M tiny = o.lt(ax, o.splat(Fmt<T>::kMinNormal));
  const F xs = o.select(tiny, o.mul(ax, o.splat(double(int64_t(1) << Fmt<T>::kDenormScale))), ax);
  F e;
  const F f = log_split(o, xs, e);
  e = o.sub(e, o.select(tiny, o.splat(Fmt<T>::kDenormScale), o.splat(0.0)));
  // s = f / (2 + f) = sh + sl.
  const DT<O> d = fast_two_sum(o, o.splat(2.0), f);  // d.hi + d.lo == 2 + f
  const F sh = o.div(f, d.hi);
  const DT<O> q = two_prod(o, sh, d.hi);
  const F rem = o.sub(o.sub(o.sub(f, q.hi), q.lo), o.mul(sh, d.lo));  // f - sh * (2 + f)
  const F sl = o.div(rem, d.hi);
  // log(1 + f) = 2s + s^3 (2/3 + z Q(z)).
  const F z = o.mul(sh, sh);
  const DT<O> w = fast_two_sum(o, o.splat(C::k23Hi), o.mul(z, horner(o, z, C::kQ)));
  const F wl = o.add(w.lo, o.splat(C::k23Lo));
  const DT<O> s2 = two_prod(o, sh, sh);
  const F s2l = o.add(s2.lo, o.mul(o.add(sh, sh), sl));
  const DT<O> s3 = two_prod(o, s2.hi, sh);
  const F s3l = o.add(s3.lo, o.add(o.mul(s2.hi, sl), o.mul(s2l, sh)));
  const DT<O> t3 = two_prod(o, s3.hi, w.hi);
  const F t3l = o.add(t3.lo, o.add(o.mul(s3.hi, wl), o.mul(s3l, w.hi)));
  const DT<O> lm = fast_two_sum(o, o.add(sh, sh), t3.hi);
  const F lml = o.add(lm.lo, o.add(o.add(sl, sl), t3l));
  // + e ln2.
  const DT<O> sum = two_sum(o, o.mul(e, o.splat(C::kLn2A)), lm.hi);
  const F low =
      o.add(sum.lo, o.add(lml, o.add(o.mul(e, o.splat(C::kLn2B)), o.mul(e, o.splat(C::kLn2C)))));
  return fast_two_sum(o, sum.hi, low);
}

// exp(th + tl), |tl| <= ulp(th): th clamped to exp's range, which gives 0 / inf at its ends.
template <class O, class F = typename O::F>
inline F exp_dt(const O& o, F th, F tl) {
  using T = typename O::T;
  using C = PowC<T>;
  using E = ExpC<T>;
  const F x = clamp_hi(o, clamp_lo(o, th, E::kLo), E::kHi);
  const Rounded<O> k = round_int(o, o.mul(x, o.splat(kLog2e)));
  const F a = o.sub(x, o.mul(k.f, o.splat(C::kLn2A)));                   // exact
  const F nb = o.bit_xor(o.mul(k.f, o.splat(C::kLn2B)), o.splat(-0.0));  // -k B, exact
  const DT<O> r = two_sum(o, a, nb);
  const F rl = o.add(r.lo, o.sub(tl, o.mul(k.f, o.splat(C::kLn2C))));
  // e^(rh + rl) = (1 + rh + tail)(1 + rl), tail = rh^2 q(rh) (exp's polynomial); 1 + rh is
  // kept exact, so only the final addition rounds at the result's precision.
  const F tail = o.mul(o.mul(r.hi, r.hi), horner(o, r.hi, E::kQ));
  const DT<O> one_r = fast_two_sum(o, o.splat(1.0), r.hi);
  const F small = o.add(tail, o.add(rl, o.mul(o.add(r.hi, tail), rl)));
  const F m = o.add(one_r.hi, o.add(one_r.lo, small));
  F res = scale2(o, m, k);
  // Past the clamp tl may be garbage (y * log x overflowed): the limits by th alone.
  res = o.select(o.gt(th, o.splat(E::kHi)), o.splat(kInf), res);
  return o.select(o.lt(th, o.splat(E::kLo)), o.splat(0.0), res);
}

}  // namespace detail

// One exponent known when the code is written (a JIT kernel's constant), rounded to T, and its
// class. (Eager's PowScalarF keeps pow's lane tests of y: GCC hoists them out of its loop, where
// these facts, runtime values there, cost a branch each per vector.)
struct PowExponent {
  double y = 0;
  bool yint = false, yodd = false, yinf = false;
};
template <class T>
PowExponent pow_exponent(double y) {
  PowExponent e;
  e.y = static_cast<double>(static_cast<T>(y));
  const double ay = std::fabs(e.y);
  e.yint = ay >= Fmt<T>::kTwoPMant || (std::isfinite(ay) && std::floor(ay) == ay);
  e.yodd = e.yint && ay < 2 * Fmt<T>::kTwoPMant && std::fmod(ay, 2.0) == 1.0;
  e.yinf = std::isinf(ay);
  return e;
}

namespace detail {

// What pow's special cases read of y: C is Lanes (y's lanes) or Cond (a known exponent).
template <class C>
struct YClass {
  C yint, yodd, yinf, yzero, yneg, ypos;
  bool not_nan = false;  // y is known not to be NaN
};

// y's class from its lanes: t = |y| + 2^(p-1) rounds |y| to an integer when |y| < 2^(p-1); it
// is one iff t - 2^(p-1) == |y|, and the lowest mantissa bit of t is its parity.
template <class O, class F = typename O::F>
YClass<Lanes<O>> y_class(const O& o, F y) {
  using T = typename O::T;
  using M = typename O::M;
  const F zero = o.splat(0.0), one = o.splat(1.0);
  const F ay = vabs(o, y);
  const F two_m = o.splat(Fmt<T>::kTwoPMant);
  const M ybig = o.ge(ay, two_m);
  const F ty = o.select(ybig, ay, o.add(ay, two_m));
  const M yint = o.mask_or(ybig, o.eq(o.sub(ty, two_m), ay));
  constexpr int top = int(sizeof(T) * 8) - 1;
  const M low_bit = o.lt(o.bit_or(o.as_float(o.shl(o.as_int(ty), top)), one), zero);
  const M yodd = o.mask_and(o.mask_and(yint, low_bit), o.lt(ay, o.add(two_m, two_m)));
  return {{yint},          {yodd},          {o.eq(ay, o.splat(kInf))},
          {o.eq(y, zero)}, {o.lt(y, zero)}, {o.gt(y, zero)}};
}

// The same class of one exponent known when the code is written (PowExponent).
template <class O>
YClass<Cond<O>> y_class_of(const PowExponent& e) {
  return {fact<O>(e.yint),  fact<O>(e.yodd),  fact<O>(e.yinf), fact<O>(e.y == 0),
          fact<O>(e.y < 0), fact<O>(e.y > 0), !std::isnan(e.y)};
}

template <class O, class C, class F = typename O::F>
F pow_with(const O& o, F x, F y, const YClass<C>& c) {
  const F zero = o.splat(0.0), one = o.splat(1.0), inf = o.splat(kInf);
  if (c.yzero.known && c.yzero.value) return one;
  const F ax = vabs(o, x);
  // |x|^y for finite |x| > 0 and finite y.
  const DT<O> lx = log_dt(o, ax);
  // (The other products are of |s| >= 2^-25 or 0 and its powers: far from underflow. This one
  // may underflow or overflow, where two_prod's e depends on the backend: there |t| < 2^-70,
  // whose exp rounds to 1 whatever tl, or th is past exp's range, which decides alone.)
  const DT<O> t = two_prod(o, y, lx.hi);
  F r = exp_dt(o, t.hi, o.add(t.lo, o.mul(y, lx.lo)));
  // |x| = 0 or inf, or |y| = inf.
  const auto to_inf = cond_or(o, cond_and(o, c.yneg, [&] { return o.lt(ax, one); }),
                              cond_and(o, c.ypos, [&] { return o.gt(ax, one); }));
  const auto edge = cond_or(o, Lanes<O>{o.mask_or(o.eq(ax, zero), o.eq(ax, inf))}, c.yinf);
  r = cond_select(o, edge, cond_select(o, to_inf, inf, zero), r);
  r = cond_select(o, cond_and(o, c.yinf, [&] { return o.eq(ax, one); }), one, r);
  // The sign: negative base (-0 and -inf included) with an odd integer exponent.
  const auto flip = cond_and(o, c.yodd, [&] {
    return o.lt(o.bit_or(sign_of(o, x), one), zero);  // sign bit set
  });
  if (!flip.known || flip.value) r = o.bit_xor(r, cond_select(o, flip, o.splat(-0.0), zero));
  const auto nan = cond_and(o, cond_not(o, c.yint), [&] {
    return o.mask_and(o.lt(x, zero), o.gt(x, o.splat(-kInf)));  // negative, finite
  });
  r = cond_select(o, nan, o.splat(kNaN), r);
  r = o.select(c.not_nan ? o.unord(x, x) : o.unord(x, y), o.add(x, y), r);
  return cond_select(o, cond_or(o, c.yzero, Lanes<O>{o.eq(x, one)}), one, r);
}

}  // namespace detail

template <class O, class F = typename O::F>
inline F pow(const O& o, F x, F y) {
  return detail::pow_with(o, x, y, detail::y_class(o, y));
}

// pow(x, y) for one exponent known when the code is written (PowScalar's, a kernel's constant):
// the bits of pow(o, x, o.splat(y)) with y rounded to T, without the lanes' tests of y.
template <class O, class F = typename O::F>
inline F pow_scalar(const O& o, F x, const PowExponent& y) {
  return detail::pow_with(o, x, o.splat(y.y), detail::y_class_of<O>(y));
}
template <class O, class F = typename O::F>
inline F pow_scalar(const O& o, F x, double y) {
  return pow_scalar(o, x, pow_exponent<typename O::T>(y));
}

}  // namespace kiln::vecmath
