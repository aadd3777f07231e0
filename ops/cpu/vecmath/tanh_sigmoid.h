// tanh, sigmoid and silu for float and double, written once over a lane backend O (vec_ops.h).
//
// tanh(x): a = min(|x|, 9.5) (float) / min(|x|, 19.5) (double), NaN-preserving (past it tanh
//   rounds to 1); e = expm1(2a) (exp_log.h: 2a is exact); tanh = e / (e + 2) (the one division),
//   with x's sign copied back: tanh(+-0) = +-0, tanh(+-inf) = +-1, NaN -> NaN.
// sigmoid(x): z = exp(-|x|) (never overflows); sigmoid = (x < 0 ? z : 1) / (1 + z), so it
//   underflows gradually for very negative x (no 1/(1 + inf) flush to 0); sigmoid(-inf) = 0,
//   sigmoid(inf) = 1, NaN -> NaN.
// silu(x) = x * sigmoid(x), the same operations as the op chain x * sigmoid(x); a NaN x is
// returned as is (silu, gelu, gelu_tanh) so its bits do not depend on operand order.
// gelu_tanh(x): the composite of the pointwise functor, in its operation order, over tanh.
//
// Measured max error (tests/test_vecmath_ulp.cpp; same sampling as exp_log.h):
//   tanh     float32 2.27 ulp   float64 2.48 ulp   (bound 3)
//   sigmoid  float32 2.23 ulp   float64 2.22 ulp   (bound 3)
//   silu     float32 2.74 ulp   float64 2.75 ulp   (bound 3.5; + |x| ulp where sigmoid(x) is
//            denormal: its absolute error is multiplied by x)
//   gelu_tanh within 4 ulp + 4 eps |x| (1 + tanh cancels for negative x)
#pragma once
#include <array>
#include <iterator>

#include "ops/cpu/vecmath/exp_log.h"

namespace kiln::vecmath {

namespace detail {
template <class T>
inline constexpr double kTanhSat = sizeof(T) == 4 ? 9.5 : 19.5;
}

namespace detail {
// The coefficients of expm1_poly's q(r) (exp_log.h) scaled for the half argument h = r/2:
// c_i * 2^(i+1), so that Horner in h gives 2 q(r) (each step is exactly 2^(i+1) times the
// step in r: scaling by a power of two commutes with rounding).
template <class T>
struct TanhQ {
  static constexpr size_t kN = std::size(ExpC<T>::kQ);
  static constexpr auto scaled() {
    std::array<double, kN> c{};
    double p = 2.0;
    for (size_t i = 0; i < kN; ++i, p *= 2.0) c[i] = ExpC<T>::kQ[i] * p;
    return c;
  }
  static constexpr std::array<double, kN> kC = scaled();
};
}  // namespace detail

// tanh(x) = e / (e + 2) with e = expm1(2a), a = min(|x|, sat), computed in an equivalent form
// with fewer operations and the same bits (every step below is exactly half the corresponding
// step of expm1(2a) or a power-of-two multiple of it; no value is subnormal where that matters):
//   k = round(2a log2e), computed as -round(a * (-2 log2e)) (the same real product);
//   h = (a - k ln2hi/2) - k ln2lo/2 = r/2 (r: expm1's reduced argument of 2a);
//   em1/2 = h + h^2 * 2q(r) (2q from Horner in h with scaled coefficients, TanhQ);
//   n/2 = em1/2 + (1/2 - 2^(-k-1)), so e = n 2^k;
//   tanh = e / (e + 2) = (n/2) / (n/2 + 2^-k) (numerator and denominator scaled by 2^-(k+1):
//   exact, so the quotient rounds the same).
// 2^(-k-1) comes from the bits of the rounding sum (as_int(t) = as_int(magic) - k) in one
// integer addition, or one vscalefps (the JIT on AVX-512, which rounds with one vrndscaleps).
// Against the expm1 form this drops 2a, the integer k, 2^k and the multiply by it
// (tests/test_vecmath_tanh_form.cpp checks the two forms bitwise; tests/test_jit_exp_dense.cpp
// the JIT's rendering against eager on every ISA).
template <class O, class F = typename O::F>
inline F tanh(const O& o, F x) {
  using T = typename O::T;
  using C = detail::ExpC<T>;
  const F a = clamp_hi(o, vabs(o, x), detail::kTanhSat<T>);
  // nk = -k, rounded from a * (-2 log2e): the same integer negated (the product is the same real
  // number negated, and rounding to nearest even is symmetric), in one instruction where the
  // backend has round_small's hook. h = (a + nk ln2hi/2) + nk ln2lo/2.
  const Rounded<O> nk = round_small(o, o.mul(a, o.splat(-2.0 * detail::kLog2e)));
  const F h = o.fma(nk.f, o.splat(C::kLn2Lo / 2), o.fma(nk.f, o.splat(C::kLn2Hi / 2), a));
  // 2^(-k-1) = 0.5 * 2^nk: one vscalefps where the backend has scale2_rounded's hook (exact
  // here); else from the bits of the rounding sum t = magic + nk: the exponent field
  // bias - 1 + nk is bits(t) + (bias - 1 - bits(magic)), shifted into place.
  F half_inv{};
  bool scaled = false;
  if constexpr (requires(F out) { o.scale2_rounded(a, a, out); })
    scaled = o.scale2_rounded(o.splat(0.5), nk.f, half_inv);
  if (!scaled) {
    const F t = nk.has_t ? nk.t : o.add(nk.f, o.splat(Fmt<T>::kRoundMagic));
    half_inv = o.as_float(o.shl(
        o.iadd(o.as_int(t), o.isplat(Fmt<T>::kBias - 1 - Fmt<T>::kRoundMagicBits)), Fmt<T>::kMant));
  }
  const F em1_half = o.fma(o.mul(h, h), horner(o, h, detail::TanhQ<T>::kC), h);
  const F n_half = o.add(em1_half, o.sub(o.splat(0.5), half_inv));
  const F q = o.div(n_half, o.add(n_half, o.add(half_inv, half_inv)));
  return o.bit_or(q, sign_of(o, x));
}

template <class O, class F = typename O::F>
inline F sigmoid(const O& o, F x) {
  const F z = exp(o, o.bit_or(vabs(o, x), o.splat(-0.0)));  // exp(-|x|)
  const F one = o.splat(1.0);
  return o.div(o.select(o.lt(x, o.splat(0.0)), z, one), o.add(one, z));
}

template <class O, class F = typename O::F>
inline F silu(const O& o, F x) {
  // A NaN x is returned as is: x * NaN with two NaN operands would give either one's bits
  // depending on the operand order the compiler picks.
  return o.select(o.unord(x, x), x, o.mul(x, sigmoid(o, x)));
}

// gelu_tanh(x) = 0.5*x*(1 + tanh(0.7978845608028654*(x + 0.044715*x*x*x))), evaluated in the
// order of the op chain (((0.5*x) * (1 + tanh(c * (x + ((0.044715*x)*x)*x))))).
template <class O, class F = typename O::F>
inline F gelu_tanh(const O& o, F x) {
  const F cube = o.mul(o.mul(o.mul(o.splat(0.044715), x), x), x);
  const F t = tanh(o, o.mul(o.splat(0.79788456080286535588), o.add(x, cube)));
  return o.select(o.unord(x, x), x, o.mul(o.mul(o.splat(0.5), x), o.add(o.splat(1.0), t)));
}

}  // namespace kiln::vecmath
