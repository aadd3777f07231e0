// Lane conditions that may be known when the code is written, for vector-math templates whose
// special cases depend on an argument that is sometimes one known number (pow's exponent).
// Written with the lane contract (vec_ops.h) only; operations on known facts emit nothing.
#pragma once

namespace kiln::vecmath::detail {

// A condition of the lanes: masks (Lanes), or possibly a fact known when the code is written
// (Cond: pow_scalar's class of a constant exponent, pow.h). Operations on
// known facts emit nothing, so a constant exponent's kernel carries none of y's tests; Lanes
// decide nothing at run time (eager's loops keep their straight-line code).
template <class O>
struct Lanes {
  static constexpr bool known = false, value = false;
  typename O::M m;
};
template <class O>
struct Cond {
  bool known = false, value = false;
  typename O::M m;
};
template <class O>
Cond<O> fact(bool v) {
  Cond<O> c;
  c.known = true;
  c.value = v;
  return c;
}
template <class O>
Cond<O> as_cond(const Lanes<O>& a) {
  Cond<O> c;
  c.m = a.m;
  return c;
}
template <class O>
Cond<O> as_cond(const Cond<O>& a) {
  return a;
}
// a && b(): b's lanes are computed only where a does not decide.
template <class O, class MF>
Lanes<O> cond_and(const O& o, const Lanes<O>& a, MF b) {
  return {o.mask_and(a.m, b())};
}
template <class O, class MF>
Cond<O> cond_and(const O& o, const Cond<O>& a, MF b) {
  if (!a.known) return as_cond(cond_and(o, Lanes<O>{a.m}, b));
  return a.value ? as_cond(Lanes<O>{b()}) : a;
}
template <class O>
Lanes<O> cond_or(const O& o, const Lanes<O>& a, const Lanes<O>& b) {
  return {o.mask_or(a.m, b.m)};
}
template <class O, class A, class B>
Cond<O> cond_or(const O& o, const A& a0, const B& b0) {
  const Cond<O> a = as_cond(a0), b = as_cond(b0);
  if (a.known) return a.value ? a : b;
  if (b.known) return b.value ? b : a;
  return as_cond(cond_or(o, Lanes<O>{a.m}, Lanes<O>{b.m}));
}
template <class O>
Lanes<O> cond_not(const O& o, const Lanes<O>& a) {
  return {o.mask_not(a.m)};
}
template <class O>
Cond<O> cond_not(const O& o, const Cond<O>& a) {
  return a.known ? fact<O>(!a.value) : as_cond(cond_not(o, Lanes<O>{a.m}));
}
template <class O, class F = typename O::F>
F cond_select(const O& o, const Lanes<O>& c, F a, F b) {
  return o.select(c.m, a, b);
}
template <class O, class F = typename O::F>
F cond_select(const O& o, const Cond<O>& c, F a, F b) {
  return c.known ? (c.value ? a : b) : o.select(c.m, a, b);
}

}  // namespace kiln::vecmath::detail
