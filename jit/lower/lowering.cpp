#include "jit/lower/lowering.h"

#include <cmath>
#include <limits>

#include "ops/meta_helpers.h"
#include "ops/pointwise.h"
#include "ops/pointwise_rules.h"
#include "runtime/dispatcher.h"

namespace kiln::jit {

ExprOp binary_expr(OpId op) {
  switch (op) {
    case OpId::Add:
      return ExprOp::Add;
    case OpId::Sub:
      return ExprOp::Sub;
    case OpId::Mul:
      return ExprOp::Mul;
    case OpId::Div:
      return ExprOp::Div;
    case OpId::Maximum:
      return ExprOp::Maximum;
    case OpId::Minimum:
      return ExprOp::Minimum;
    case OpId::Eq:
      return ExprOp::Eq;
    case OpId::Ne:
      return ExprOp::Ne;
    case OpId::Lt:
      return ExprOp::Lt;
    case OpId::Le:
      return ExprOp::Le;
    case OpId::Gt:
      return ExprOp::Gt;
    case OpId::Ge:
      return ExprOp::Ge;
    case OpId::LogicalAnd:
      return ExprOp::And;
    case OpId::LogicalOr:
      return ExprOp::Or;
    default:
      return ExprOp::kCount;
  }
}

namespace {

using tracer::Node;

// The expression op of a unary pointwise node that maps one to one (else kCount).
ExprOp unary_expr(OpId op) {
  switch (op) {
#define KILN_SAME(name) \
  case OpId::name:      \
    return ExprOp::name;
    KILN_SAME(Neg)
    KILN_SAME(Abs)
    KILN_SAME(Sqrt)
    KILN_SAME(Rsqrt)
    KILN_SAME(Reciprocal)
    KILN_SAME(Square)
    KILN_SAME(Relu)
    KILN_SAME(Sign)
    KILN_SAME(Exp)
    KILN_SAME(Log)
    KILN_SAME(Log1p)
    KILN_SAME(Expm1)
    KILN_SAME(Tanh)
    KILN_SAME(Sigmoid)
    KILN_SAME(Silu)
    KILN_SAME(Erf)
    KILN_SAME(Sin)
    KILN_SAME(Cos)
    KILN_SAME(Gelu)
    KILN_SAME(GeluTanh)
    KILN_SAME(Floor)
    KILN_SAME(Ceil)
    KILN_SAME(Round)
#undef KILN_SAME
    default:
      return ExprOp::kCount;
  }
}

bool rounds(OpId op) { return op == OpId::Floor || op == OpId::Ceil || op == OpId::Round; }

// pow's exponent forms. Floats: PowScalarF special-cases the exponents 2, 0.5 and 1 (x * x,
// sqrt(x), x), compared as doubles (Scalar::to_double), and otherwise computes vecmath::pow with
// the exponent converted to the compute dtype; a promoted exponent becomes a Float64 param (the
// comparisons need the double, which a Float32 param would have rounded) and selects among the
// four. PowF (two tensors, or a Scalar on either side) is vecmath::pow alone. Integers: int_pow
// by squaring with wrapping products; a baked exponent is unrolled into the same products
// (b^e modulo 2^w does not depend on how the products are grouped), a runtime one (a tensor, a
// promoted Scalar, or a Scalar base) is an integer `Pow`, a loop over the exponent's bits.
enum class PowForm { None, FloatConst, FloatParam, FloatTensor, IntConst, IntRuntime };
PowForm pow_form(const Node& n, const ScalarSource& s, DType cd) {
  const int side = n.op == OpId::Pow ? scalar_side(n.attrs) : kScalarRight;
  if (is_floating(cd)) {
    if (n.op == OpId::Pow) return PowForm::FloatTensor;
    return s.param[0] >= 0 ? PowForm::FloatParam : PowForm::FloatConst;
  }
  if (side == kScalarRight && s.param[0] < 0) return PowForm::IntConst;
  return PowForm::IntRuntime;
}

// int_pow(b, e) for a baked exponent e (already converted to the compute dtype).
int32_t int_pow_const(LoopKernel& k, int32_t b, int64_t e, DType cd) {
  if (e < 0) {  // 1 / b^|e| truncated: 1 for b == 1, +-1 for b == -1, else 0
    const int32_t one = k.constant_int(1, cd), minus_one = k.constant_int(-1, cd);
    const int32_t r = k.select(k.binary(ExprOp::Eq, b, minus_one), (e & 1) != 0 ? minus_one : one,
                               k.constant_int(0, cd));
    return k.select(k.binary(ExprOp::Eq, b, one), one, r);
  }
  int32_t r = -1;  // 1 until the first factor
  for (uint64_t bits = static_cast<uint64_t>(e); bits != 0; bits >>= 1) {
    if ((bits & 1) != 0) r = r < 0 ? b : k.binary(ExprOp::Mul, r, b);
    if (bits > 1) b = k.binary(ExprOp::Mul, b, b);
  }
  return r < 0 ? k.constant_int(1, cd) : r;
}

// The dtype the eager kernel of `n` (a pointwise node) computes in, from its inputs' metadata,
// as ops/pointwise.cpp derives it.
DType compute_dtype(const Node& n, std::span<const tracer::ValueMeta* const> inputs) {
  if (n.op == OpId::Cast) return n.meta.dtype;
  if (n.op == OpId::Where || n.op == OpId::MaskedFill) return n.meta.dtype;
  const bool binary = binary_expr(n.op) != ExprOp::kCount || n.op == OpId::Pow;
  const DTypeRule rule =
      n.inputs.size() == 1 && !binary ? unary_dtype_rule(n.op) : binary_dtype_rule(n.op);
  if (rule != DTypeRule::BoolOut) {
    // Every other rule outputs its compute dtype (BoolIn computes in Bool).
    return rule == DTypeRule::BoolIn ? DType::Bool : n.meta.dtype;
  }
  ResultType rt;  // compares and isnan: the promoted inputs
  for (const tracer::ValueMeta* m : inputs) rt.add(m->dtype, m->sizes.empty());
  if (binary && scalar_side(n.attrs) != kNoScalar) rt.add(n.attrs.scalars[0]);
  return rt.get();
}

// A scalar of the node as the expression the eager kernel would use: the value converted to
// the compute dtype (Scalar::to<T>), or the kernel parameter it was promoted to.
int32_t scalar_expr(LoopKernel& k, const Node& n, const ScalarSource& s, int i, DType cd) {
  if (s.param[i] >= 0) {
    k.params[s.param[i]] = cd;
    return k.param(s.param[i]);
  }
  const Scalar& v = n.attrs.scalars[static_cast<size_t>(i)];
  switch (cd) {
    case DType::Float32:
      return k.constant(static_cast<double>(v.to<float>()), cd);
    case DType::Float64:
      return k.constant(v.to<double>(), cd);
    case DType::Int32:
      return k.constant_int(v.to<int32_t>(), cd);
    case DType::Int64:
      return k.constant_int(v.to<int64_t>(), cd);
    default:
      return k.constant_int(v.to<bool>(), cd);
  }
}

// Ops that compute in Bool (ops/cpu/pointwise_functors.h): add, mul, maximum, minimum and the
// compares of two Bools, where and masked_fill giving a Bool, sign and isnan of a Bool. Their
// eager kernels compute bool(int(a) op int(b)) (C++ promotes bools to int: a + b is a || b, a *
// b is a && b, a < b compares 0 and 1), so the lowering computes them in Int32 and casts the
// result back to Bool (`!= 0`): eager's bits, and no target needs Bool arithmetic of its own.
// (sub of Bools is an error in eager; div computes in a float type.)
constexpr DType kBoolVia = DType::Int32;

bool computes_via_int(ExprOp b) {
  return b == ExprOp::Add || b == ExprOp::Mul || b == ExprOp::Maximum || b == ExprOp::Minimum ||
         expr_is_compare(b);
}

// Attrs::scalars[i] as eager converts it for a Bool result (Scalar::to<bool>: not zero, NaN
// included), as an Int32 0 or 1. A promoted one is a Float64 param (params are numbers) cast to
// Bool, which keeps that "not zero".
int32_t bool_scalar_via_int(LoopKernel& k, const Node& n, const ScalarSource& s, int i) {
  if (s.param[i] >= 0) {
    k.params[s.param[i]] = DType::Float64;
    return k.as_type(k.as_type(k.param(s.param[i]), DType::Bool), kBoolVia);
  }
  return k.constant_int(n.attrs.scalars[static_cast<size_t>(i)].to<bool>() ? 1 : 0, kBoolVia);
}

// pow(x, e) (PowScalar) or pow of two operands (Pow, a Scalar on either side), with `x` the
// tensor inputs in the compute dtype, as PowScalarF / PowF / int_pow compute it.
int32_t lower_pow(LoopKernel& k, const Node& n, std::span<const int32_t> x,
                  const ScalarSource& scalars, DType cd) {
  switch (pow_form(n, scalars, cd)) {
    case PowForm::FloatConst: {
      const double ed = n.attrs.scalars[0].to_double();
      if (ed == 2.0) return k.binary(ExprOp::Mul, x[0], x[0]);
      if (ed == 0.5) return k.unary(ExprOp::Sqrt, x[0]);
      if (ed == 1.0) return x[0];
      return k.binary(ExprOp::Pow, x[0], scalar_expr(k, n, scalars, 0, cd));
    }
    case PowForm::FloatParam: {
      k.params[scalars.param[0]] = DType::Float64;
      const int32_t pd = k.param(scalars.param[0]);
      const int32_t y = k.binary(ExprOp::Pow, x[0], k.as_type(pd, cd));
      auto is = [&](double v) { return k.binary(ExprOp::Eq, pd, k.constant(v, DType::Float64)); };
      int32_t r = k.select(is(1.0), x[0], y);
      r = k.select(is(0.5), k.unary(ExprOp::Sqrt, x[0]), r);
      return k.select(is(2.0), k.binary(ExprOp::Mul, x[0], x[0]), r);
    }
    case PowForm::FloatTensor:
    case PowForm::IntRuntime:
      if (n.op == OpId::PowScalar)  // a promoted exponent (integers)
        return k.binary(ExprOp::Pow, x[0], scalar_expr(k, n, scalars, 0, cd));
      switch (scalar_side(n.attrs)) {
        case kScalarRight:
          return k.binary(ExprOp::Pow, x[0], scalar_expr(k, n, scalars, 0, cd));
        case kScalarLeft:
          return k.binary(ExprOp::Pow, scalar_expr(k, n, scalars, 0, cd), x[0]);
        default:
          return k.binary(ExprOp::Pow, x[0], x[1]);
      }
    case PowForm::IntConst: {
      const Scalar& e = n.attrs.scalars[0];
      const int64_t ev = cd == DType::Int32 ? e.to<int32_t>() : e.to<int64_t>();
      return int_pow_const(k, x[0], ev, cd);
    }
    default:
      fail("lowering: {} does not lower for {}", op_name(n.op), cd);
  }
}

// dropout(x, p) in training (ops/dropout.cpp): u = random_uniform<T>(seed, counter + i), kept iff
// u >= p compared in double, then x * T(1 / (1 - p)), else x * 0. A baked p is compared in T
// exactly: for a float u, u >= p iff u >= the least float not below p. A promoted p is a Float64
// param (u widened exactly; the scale computed in double and rounded, as eager does).
int32_t lower_dropout(LoopKernel& k, const Node& n, int32_t x, const ScalarSource& s, DType t) {
  KILN_CHECK(s.philox >= 0, "lowering: dropout without its Philox params");
  const int32_t u = k.rand_uniform(s.philox, t);
  int32_t keep = -1, scale = -1;
  if (s.param[0] >= 0) {
    k.params[s.param[0]] = DType::Float64;
    const int32_t p = k.param(s.param[0]);
    const int32_t one = k.constant(1.0, DType::Float64);
    keep = k.binary(ExprOp::Ge, k.as_type(u, DType::Float64), p);
    scale = k.as_type(k.binary(ExprOp::Div, one, k.binary(ExprOp::Sub, one, p)), t);
  } else {
    const double p = n.attrs.scalars[0].to_double();
    double bound = p;
    if (t == DType::Float32) {
      float pf = static_cast<float>(p);
      if (static_cast<double>(pf) < p)
        pf = std::nextafter(pf, std::numeric_limits<float>::infinity());
      bound = pf;
    }
    keep = k.binary(ExprOp::Ge, u, k.constant(bound, t));
    scale = k.constant(1.0 / (1.0 - p), t);  // rounded to t, as static_cast<T> does
  }
  return k.select(keep, k.binary(ExprOp::Mul, x, scale),
                  k.binary(ExprOp::Mul, x, k.constant(0.0, t)));
}

}  // namespace

bool lowers(const Node& n, std::span<const tracer::ValueMeta* const> inputs,
            const ScalarSource& scalars, const KernelTarget& target, Device device) {
  const DType od = n.meta.dtype;
  if (!n.subgraphs.empty() || n.meta.device != device || !n.meta.strides.empty()) return false;
  for (const tracer::ValueMeta* m : inputs)
    if (m->device != device) return false;
  if (n.op == OpId::Cast) return inputs.size() == 1 && target.supports(ExprOp::Cast, od);
  if (n.op == OpId::Where || n.op == OpId::MaskedFill) {
    const size_t cond = n.op == OpId::Where ? 0 : 1;
    const bool via_int = od == DType::Bool;  // selects among Int32 0 / 1, cast back
    return inputs.size() == (n.op == OpId::Where ? 3u : 2u) && inputs[cond]->dtype == DType::Bool &&
           target.supports(ExprOp::Select, via_int ? kBoolVia : od) &&
           (!via_int || target.supports(ExprOp::Cast, DType::Bool));
  }
  if (n.op == OpId::Rand)  // its shape is its attrs' (fixed in the region's key)
    return n.inputs.empty() && is_floating(od) && target.supports(ExprOp::RandUniform, od);
  if (n.op == OpId::Dropout)  // recorded only in training with 0 < p < 1 (ops/dropout.cpp)
    return inputs.size() == 1 && is_floating(od) && inputs[0]->dtype == od &&
           target.supports(ExprOp::RandUniform, od) && target.supports(ExprOp::Select, od);
  const ExprOp u = unary_expr(n.op);
  const ExprOp b = binary_expr(n.op);
  if (u == ExprOp::kCount && b == ExprOp::kCount && n.op != OpId::Clamp &&
      n.op != OpId::PowScalar && n.op != OpId::Pow && n.op != OpId::Isnan &&
      n.op != OpId::LogicalNot)
    return false;
  const DType cd = compute_dtype(n, inputs);
  if (n.op == OpId::LogicalNot || n.op == OpId::LogicalAnd || n.op == OpId::LogicalOr)
    return target.supports(n.op == OpId::LogicalNot ? ExprOp::Not : b, DType::Bool);
  if (n.op == OpId::Isnan)  // x != x: false for integers and Bools
    return target.supports(ExprOp::Ne, cd == DType::Bool ? kBoolVia : cd);
  if (cd == DType::Bool) {  // through Int32 (computes_via_int); sign of a Bool is itself
    if (n.op == OpId::Sign) return true;
    return computes_via_int(b) && target.supports(b, kBoolVia) &&
           target.supports(ExprOp::Cast, DType::Bool);
  }
  if (n.op == OpId::Clamp) return target.supports(ExprOp::Select, cd);
  if (n.op == OpId::PowScalar || n.op == OpId::Pow) {
    switch (pow_form(n, scalars, cd)) {
      case PowForm::FloatConst:
      case PowForm::FloatParam:
        return target.supports(ExprOp::Pow, cd) && target.supports(ExprOp::Sqrt, cd) &&
               target.supports(ExprOp::Select, cd);
      case PowForm::FloatTensor:
        return target.supports(ExprOp::Pow, cd);
      case PowForm::IntConst:
        return target.supports(ExprOp::Mul, cd) && target.supports(ExprOp::Select, cd);
      case PowForm::IntRuntime:
        return target.supports(ExprOp::Pow, cd);
      default:
        return false;
    }
  }
  if (u != ExprOp::kCount) return (rounds(n.op) && !is_floating(cd)) || target.supports(u, cd);
  return target.supports(b, cd);
}

int32_t lower_node(LoopKernel& k, const Node& n, std::span<const tracer::ValueMeta* const> inputs,
                   std::span<const int32_t> in, const ScalarSource& scalars) {
  const DType od = n.meta.dtype;
  if (n.op == OpId::Cast) return k.as_type(in[0], od);
  if (n.op == OpId::Where && od == DType::Bool)
    return k.as_type(k.select(in[0], k.as_type(in[1], kBoolVia), k.as_type(in[2], kBoolVia)),
                     DType::Bool);
  if (n.op == OpId::Where)  // cond ? a : b, both converted to the output dtype
    return k.select(in[0], k.as_type(in[1], od), k.as_type(in[2], od));
  if (n.op == OpId::MaskedFill && od == DType::Bool)
    return k.as_type(
        k.select(in[1], bool_scalar_via_int(k, n, scalars, 0), k.as_type(in[0], kBoolVia)),
        DType::Bool);
  if (n.op == OpId::MaskedFill)
    return k.select(in[1], scalar_expr(k, n, scalars, 0, od), k.as_type(in[0], od));
  if (n.op == OpId::Dropout) return lower_dropout(k, n, in[0], scalars, od);
  if (n.op == OpId::Rand) {
    KILN_CHECK(scalars.philox >= 0, "lowering: rand without its Philox params");
    return k.rand_uniform(scalars.philox, od);
  }
  const DType cd = compute_dtype(n, inputs);
  if (n.op == OpId::Sign && cd == DType::Bool) return in[0];
  const bool logical =
      n.op == OpId::LogicalNot || n.op == OpId::LogicalAnd || n.op == OpId::LogicalOr;
  const bool via_int = cd == DType::Bool && !logical;  // computes_via_int
  const DType wd = via_int ? kBoolVia : cd;
  SmallVector<int32_t, 2> x;  // the inputs in the dtype computed in
  for (int32_t id : in) x.push_back(k.as_type(id, wd));
  if (n.op == OpId::LogicalNot) return k.unary(ExprOp::Not, x[0]);
  if (n.op == OpId::Isnan) return k.binary(ExprOp::Ne, x[0], x[0]);  // x != x
  const ExprOp u = unary_expr(n.op);
  if (u != ExprOp::kCount) {
    if (rounds(n.op) && !is_floating(cd)) return x[0];  // integers are integral already
    return k.unary(u, x[0]);
  }
  if (n.op == OpId::PowScalar || n.op == OpId::Pow) return lower_pow(k, n, x, scalars, cd);
  const ExprOp b = binary_expr(n.op);
  if (b != ExprOp::kCount && via_int) {
    const int side = scalar_side(n.attrs);
    const int32_t y = side == kNoScalar ? x[1] : bool_scalar_via_int(k, n, scalars, 0);
    const int32_t r = side == kScalarLeft ? k.binary(b, y, x[0]) : k.binary(b, x[0], y);
    return expr_is_compare(b) ? r : k.as_type(r, DType::Bool);
  }
  if (b != ExprOp::kCount) {
    switch (scalar_side(n.attrs)) {
      case kScalarRight:
        return k.binary(b, x[0], scalar_expr(k, n, scalars, 0, cd));
      case kScalarLeft:
        return k.binary(b, scalar_expr(k, n, scalars, 0, cd), x[0]);
      default:
        return k.binary(b, x[0], x[1]);
    }
  }
  if (n.op == OpId::Clamp) {  // v = x < lo ? lo : x; v > hi ? hi : v
    const int32_t lo = scalar_expr(k, n, scalars, 0, cd), hi = scalar_expr(k, n, scalars, 1, cd);
    const int32_t v = k.select(k.binary(ExprOp::Lt, x[0], lo), lo, x[0]);
    return k.select(k.binary(ExprOp::Gt, v, hi), hi, v);
  }
  fail("lowering: {} does not lower", op_name(n.op));
}

}  // namespace kiln::jit
