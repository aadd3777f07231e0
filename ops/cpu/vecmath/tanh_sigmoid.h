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
//   tanh     float32 2.44 ulp   float64 2.40 ulp   (bound 3)
//   sigmoid  float32 2.23 ulp   float64 2.22 ulp   (bound 3)
//   silu     float32 2.74 ulp   float64 2.75 ulp   (bound 3.5; + |x| ulp where sigmoid(x) is
//            denormal: its absolute error is multiplied by x)
//   gelu_tanh within 4 ulp + 4 eps |x| (1 + tanh cancels for negative x)
#pragma once
#include "ops/cpu/vecmath/exp_log.h"

namespace kiln::vecmath {

namespace detail {
template <class T>
inline constexpr double kTanhSat = sizeof(T) == 4 ? 9.5 : 19.5;
}

namespace detail {
// expm1(y) for y in [0, 2 kTanhSat] or NaN: the steps of expm1 (exp_log.h) without what this
// range never needs (the clamps, the zero test, and 2^k split in two factors against overflow:
// k <= 56 here). Every removed step was exact or a no-op on this range, so the bits are
// expm1's; it saves about a third of tanh's operations.
template <class O, class F = typename O::F>
inline F expm1_tanh_range(const O& o, F y) {
  F r;
  const Rounded<O> k = exp_reduce(o, y, r);
  const F em1 = expm1_poly(o, r);
  const F inv = pow2i(o, o.isub(o.isplat(0), k.i));  // 2^-k, exact
  return o.mul(o.add(em1, o.sub(o.splat(1.0), inv)), pow2i(o, k.i));
}
}  // namespace detail

template <class O, class F = typename O::F>
inline F tanh(const O& o, F x) {
  const F a = clamp_hi(o, vabs(o, x), detail::kTanhSat<typename O::T>);
  const F e = detail::expm1_tanh_range(o, o.add(a, a));
  const F t = o.div(e, o.add(e, o.splat(2.0)));
  return o.bit_or(t, sign_of(o, x));
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
