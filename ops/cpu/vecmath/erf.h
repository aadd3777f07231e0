// erf and gelu (erf form) for float and double, written once over a lane backend O (vec_ops.h).
//
// erf(x): a = min(|x|, 4) (float) / min(|x|, 6) (double), NaN-preserving: past 3.92 / 5.92 erf
//   rounds to 1. The sign of x is copied back at the end (erf(+-0) = +-0, erf(+-inf) = +-1).
//   a < 1: erf = a + a*Q(a^2), Q a degree-6 (float) / degree-11 (double) polynomial for
//     erf(a)/a - 1 (Chebyshev interpolant).
//   a >= 1, float: erf = c0 + G(a - 2.5), G a degree-15 polynomial for erf - c0 on [1, 4] (c0 =
//     erf(2.5) rounded to float): no exp. (Until 2026-11-28 float took double's route below with
//     one degree-9 piece: 1 - exp(L) cost ~42 operations a vector, G's Horner ~32.)
//   a >= 1, double: erf = 1 - exp(L(a - c)), L a polynomial for log(erfc) in two pieces, [1, 2.5)
//     (c = 1) and [2.5, 6] (c = 4.25), both of degree 16, the coefficients picked per lane with
//     selects. exp is exp_log.h's.
//   Both branches are computed and one is selected: no division.
// gelu(x) = 0.5*x*(1 + erf(x*M_SQRT1_2)), in the order of the op chain ((0.5*x) * (1 + erf(x*c))).
//
// Measured max error (tests/test_vecmath_ulp.cpp):
//   erf   float32 0.90 ulp   float64 1.14 ulp   (bound 2)
//   gelu  within 4 ulp + 4 eps |x| (1 + erf cancels for negative x)
#pragma once
#include "ops/cpu/vecmath/exp_log.h"

namespace kiln::vecmath {

namespace detail {

template <class T>
struct ErfC;
template <>
struct ErfC<float> {
  static constexpr double kSat = 4.0;
  static constexpr double kSmall[] = {0.1283791658483509460261,    -0.3761262666672033102341,
                                      0.1128359471516021773188,    -0.02685421201062641244346,
                                      0.005189087423433973986077,  -0.0008016864287165869529305,
                                      0.00007875875062685488341056};
  // erf(a) - kC0 for a in [1, 4] as a polynomial in a - kCenter (Chebyshev interpolant, 1e-9
  // absolute: 0.017 ulp of 1); kC0 is erf(kCenter) rounded to float.
  static constexpr double kCenter = 2.5, kC0 = 0.9995930194854736;
  static constexpr double kLarge[] = {
      2.802247688894639777637e-8,    0.002178283553255514855349,   -0.005445683317556120767479,
      0.008350128062962861539355,    -0.008622641810899186005702,  0.006116989049688108650331,
      -0.002797455525194225037451,   0.0005436847523734309632929,  0.0002586050767933320663032,
      -0.0002525023459441760657372,  0.00008118151327887047031423, 0.000007220430687436051747116,
      -0.00001574534023486968879882, 0.0000036213872665042053932,  8.934341108275976426757e-7,
      -3.701029458657444401721e-7};
};
template <>
struct ErfC<double> {
  static constexpr double kSat = 6.0;
  static constexpr double kSmall[] = {
      0.1283791670955125665361,    -0.3761263890318354043848,     0.1128379167094500626552,
      -0.0268661706432377703602,   0.005223977607116422732105,    -0.000854832597538969208056,
      0.0001205529490483970791654, -0.00001492473690741966033761, 0.000001644742470331736241018,
      -1.620848380187170590169e-7, 1.372006454677768560415e-8,    -7.795898827002142241636e-10};
  static constexpr double kSplit = 2.5, kC0 = 1.0, kC1 = 4.25;
  static constexpr double kLarge0[] = {
      // [1, 2.5), t = a - 1
      -1.849605509933248251979,     -2.63896751423478994893,        -0.8431072563585694112357,
      -0.04156109804438855853876,   0.01003382540570797426412,      -0.001977902788607825132596,
      0.0002373234596476921597158,  0.00002627503396940511056843,   -0.00002715365070186725879537,
      0.00000960222031457900505975, -0.000002055571188400235428464, 1.438909681237261398944e-7,
      9.256595690057324894289e-8,   -4.68047209286172970986e-8,     1.179005638255965690988e-8,
      -1.711028890775080533017e-9,  1.139854494068847429539e-10};
  static constexpr double kLarge1[] = {
      // [2.5, 6], t = a - 4.25
      -20.10776990146970690644,    -8.723775715521953137237,       -0.9760845763968831397584,
      -0.003263744278957715688175, 0.0004805287564290577489742,    -0.00007237983657975444648496,
      0.0000108792518183043688978, -0.000001606728632363087697371, 2.30196737919487030789e-7,
      -3.154825282334365193891e-8, 4.051516015342506952177e-9,     -4.67430547442825205536e-10,
      4.435655510937354889493e-11, -2.940872614232999039842e-12,   -2.699128852912786330996e-13,
      2.869822084137051328461e-13, -5.946112033676617542601e-14};
};

// Horner with per-lane coefficients: m ? a[i] : b[i].
template <class O, size_t N, class F = typename O::F>
inline F horner_sel(const O& o, F x, typename O::M m, const double (&a)[N], const double (&b)[N]) {
  F p = o.select(m, o.splat(a[N - 1]), o.splat(b[N - 1]));
  for (size_t i = N - 1; i-- > 0;) p = o.fma(p, x, o.select(m, o.splat(a[i]), o.splat(b[i])));
  return p;
}

}  // namespace detail

template <class O, class F = typename O::F>
inline F erf(const O& o, F x) {
  using T = typename O::T;
  using C = detail::ErfC<T>;
  const F a = clamp_hi(o, vabs(o, x), C::kSat);
  const F small = o.fma(a, horner(o, o.mul(a, a), C::kSmall), a);
  F big;
  if constexpr (sizeof(T) == 4) {
    big = o.add(o.splat(C::kC0), horner(o, o.sub(a, o.splat(C::kCenter)), C::kLarge));
  } else {
    const typename O::M lo = o.lt(a, o.splat(C::kSplit));
    const F t = o.sub(a, o.select(lo, o.splat(C::kC0), o.splat(C::kC1)));
    big = o.sub(o.splat(1.0), exp(o, detail::horner_sel(o, t, lo, C::kLarge0, C::kLarge1)));
  }
  const F r = o.select(o.lt(a, o.splat(1.0)), small, big);
  return o.bit_or(r, sign_of(o, x));
}

template <class O, class F = typename O::F>
inline F gelu(const O& o, F x) {
  const F e = erf(o, o.mul(x, o.splat(0.70710678118654752440)));
  return o.select(o.unord(x, x), x, o.mul(o.mul(o.splat(0.5), x), o.add(o.splat(1.0), e)));
}

}  // namespace kiln::vecmath
