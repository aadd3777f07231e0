// sin and cos for float and double, written once over a lane backend O (vec_ops.h).
//
// Range reduction (Cody-Waite): k = round(x*2/pi); r = (((x - k*C1) - k*C2) - k*C3) - k*C4 with
//   pi/2 = C1 + C2 + C3 + C4, C1..C3 of 12 (float) / 33 (double) significant bits so that k*Ci is
//   exact for |k| < 2^12 / 2^20 (and x - k*C1 exact by Sterbenz), C4 the rounded tail: accurate
//   for |x| <= 6000 (float) / 1.5e6 (double).
//   Past that (kHuge), lanes take the exact Payne-Hanek reduction of reduce_pio2.h (scalar
//   integer code, lane by lane) through the backend's optional reduce_pio2_huge(x, bound, r, k):
//   GnuVecOps has it; a backend without it keeps the Cody-Waite r, clamped to [-0.8, 0.8], which
//   is finite and in [-1, 1] but carries no accuracy guarantee past kHuge.
// Polynomials on |r| <= pi/4: sin r = r + r^3*S(r^2), cos r = 1 - (r^2/2 - r^4*Cp(r^2)), S and Cp
//   Chebyshev interpolants of degree 3 / 6 in r^2. The quadrant (k mod 4) picks the polynomial
//   (select) and the sign (xor of the sign bit), both taken from the integer lanes of k.
// sin(+-0) = +-0, cos(+-0) = 1; sin/cos(+-inf) = NaN; NaN -> NaN.
//
// Measured max error over the whole range (tests/test_vecmath_ulp.cpp):
//   sin   float32 2.39 ulp   float64 1.66 ulp   (bound 3)
//   cos   float32 2.29 ulp   float64 1.88 ulp   (bound 3)
#pragma once
#include "ops/cpu/vecmath/common.h"

namespace kiln::vecmath {

namespace detail {

template <class T>
struct SinCosC;
template <>
struct SinCosC<float> {
  static constexpr double kHuge = 6000.0;  // past it: reduce_pio2_huge
  static constexpr double kC1 = 1.57080078125, kC2 = -4.4535845518112182617e-6,
                          kC3 = -8.7061380327213555574e-10, kC4 = 6.2233721718966133923e-14;
  static constexpr double kS[] = {-0.1666666666362402284397, 0.008333331785671729736288,
                                  -0.0001984003911301221364281, 0.000002724381197525810661968};
  static constexpr double kC[] = {0.04166666666412820579874, -0.001388888759770674641513,
                                  0.00002480056063060634351876, -2.72958563395460022519e-7};
};
template <>
struct SinCosC<double> {
  static constexpr double kHuge = 1.5e6;
  static constexpr double kC1 = 1.57079632673412561416626, kC2 = 6.077100506303965976595549e-11,
                          kC3 = 2.022266248711166455795996e-21,
                          kC4 = 8.478427660368899643958701e-32;
  static constexpr double kS[] = {-0.1666666666666666666534,    0.008333333333333331260049,
                                  -0.0001984126984126456847686, 0.000002755731921895673174855,
                                  -2.50521061009266731845e-8,   1.605851097953535053577e-10,
                                  -7.585492507821239755204e-13};
  static constexpr double kC[] = {0.04166666666666666666593,    -0.001388888888888888773632,
                                  0.00002480158730158437040422, -2.755731922119019920034e-7,
                                  2.087675571795729413196e-9,   -1.147044941240970972212e-11,
                                  4.745202155702359029129e-14};
};
constexpr double kTwoOverPi = 0.63661977236758134308;

// sin(x + q0*pi/2): q0 = 0 for sin, 1 for cos.
template <class O, class F = typename O::F>
inline F sin_quadrant(const O& o, F x, int q0) {
  using T = typename O::T;
  using C = SinCosC<T>;
  const Rounded<O> k = round_int(o, o.mul(x, o.splat(kTwoOverPi)));
  F r = o.fma(k.f, o.splat(-C::kC1), x);
  r = o.fma(k.f, o.splat(-C::kC2), r);
  r = o.fma(k.f, o.splat(-C::kC3), r);
  r = o.fma(k.f, o.splat(-C::kC4), r);
  r = clamp_hi(o, clamp_lo(o, r, -0.8), 0.8);  // only past the Cody-Waite range
  typename O::I ki = k.i(o);
  // Past the Cody-Waite range: the exact reduction, lane by lane, where the backend has it.
  if constexpr (requires { o.reduce_pio2_huge(x, C::kHuge, r, ki); })
    o.reduce_pio2_huge(x, C::kHuge, r, ki);
  const F z = o.mul(r, r);
  const F s = o.fma(o.mul(z, r), horner(o, z, C::kS), r);
  const F c =
      o.sub(o.splat(1.0), o.sub(o.mul(o.splat(0.5), z), o.mul(o.mul(z, z), horner(o, z, C::kC))));
  const typename O::I q = o.iadd(ki, o.isplat(q0));
  constexpr int top = int(sizeof(T) * 8) - 1;
  // bit 0 of q: the cos polynomial; bit 1: negate.
  const typename O::M odd = o.lt(o.bit_or(o.as_float(o.shl(q, top)), o.splat(1.0)), o.splat(0.0));
  const F neg = o.bit_and(o.as_float(o.shl(q, top - 1)), o.splat(-0.0));
  return o.bit_xor(o.select(odd, c, s), neg);
}

}  // namespace detail

template <class O, class F = typename O::F>
inline F sin(const O& o, F x) {
  // -0 loses its sign in the reduction (-0 - k*C2 with k*C2 = -0): put it back.
  return o.select(o.eq(x, o.splat(0.0)), x, detail::sin_quadrant(o, x, 0));
}

template <class O, class F = typename O::F>
inline F cos(const O& o, F x) {
  return detail::sin_quadrant(o, x, 1);
}

}  // namespace kiln::vecmath
