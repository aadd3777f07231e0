// Unevaluated sums of two T ("double-T": double-double for float64, float-float for float32),
// written only with the primitives of the lane contract (vec_ops.h). Exact products use Dekker's
// method with operands split by clearing their low mantissa bits (exact, and the same bits in
// every backend); fma(a, b, -p) would take two operations on FMA hardware, but a baseline
// kernel's fma is a call to libm per vector. Used where a function needs more than T's precision
// inside (pow's log(x) * y).
//   two_sum(a, b):       s + e == a + b exactly, s = fl(a + b) (Knuth, any magnitudes)
//   fast_two_sum(a, b):  the same for |a| >= |b| or a == 0 (Dekker)
//   two_prod(a, b):      p + e == a * b, p = fl(a * b); exact for float32; for float64 the
//                        low halves' product rounds (relative error of e below 2^-104 of a*b).
//                        Valid while a*b and the halves' products neither overflow nor lose
//                        bits to underflow. Float32 takes fma(a, b, -p) where the backend's
//                        fma is one instruction (its optional fused_fma() hook, vec_ops.h):
//                        the same exact e in that range.
#pragma once
#include "ops/cpu/vecmath/common.h"

namespace kiln::vecmath {

template <class O>
struct DT {
  typename O::F hi, lo;
};

template <class O, class F = typename O::F>
inline DT<O> two_sum(const O& o, F a, F b) {
  const F s = o.add(a, b);
  const F bb = o.sub(s, a);
  const F e = o.add(o.sub(a, o.sub(s, bb)), o.sub(b, bb));
  return {s, e};
}

template <class O, class F = typename O::F>
inline DT<O> fast_two_sum(const O& o, F a, F b) {
  const F s = o.add(a, b);
  return {s, o.sub(b, o.sub(s, a))};
}

// a = hi + lo with hi holding the top 12 (float) / 26 (double) significant bits.
template <class O, class F = typename O::F>
inline DT<O> split(const O& o, F a) {
  using T = typename O::T;
  constexpr int low = sizeof(T) == 4 ? 12 : 27;
  const F hi = o.bit_and(a, o.as_float(o.isplat(~((int64_t(1) << low) - 1))));
  return {hi, o.sub(a, hi)};
}

template <class O, class F = typename O::F>
inline DT<O> two_prod(const O& o, F a, F b) {
  const F p = o.mul(a, b);
  if constexpr (sizeof(typename O::T) == 4 && requires { o.fused_fma(); }) {
    // Float32 on a backend whose fma is one instruction: e = fma(a, b, -p), 3 operations instead
    // of Dekker's 13. Both give the exact e wherever e is representable (no underflow), so the
    // bits do not depend on the backend there; past it (|a b| below ~2^-103, or an overflow)
    // the callers' results do not read e (pow.h says why).
    if (o.fused_fma()) return {p, o.fma(a, b, o.bit_xor(p, o.splat(-0.0)))};
  }
  const DT<O> as = split(o, a), bs = split(o, b);
  F e = o.sub(o.mul(as.hi, bs.hi), p);
  e = o.add(e, o.mul(as.hi, bs.lo));
  e = o.add(e, o.mul(as.lo, bs.hi));
  e = o.add(e, o.mul(as.lo, bs.lo));
  return {p, e};
}

}  // namespace kiln::vecmath
