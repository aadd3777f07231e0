#include "jit/plan/lowering.h"

#include "ops/meta_helpers.h"
#include "ops/pointwise.h"
#include "ops/pointwise_rules.h"
#include "runtime/dispatcher.h"

namespace kiln::jit {

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

bool rounds(OpId op) { return op == OpId::Floor || op == OpId::Ceil || op == OpId::Round; }

// pow(x, e) with a baked exponent the eager functor special-cases (PowScalarF): floats 2, 0.5
// and 1; integers 2 and 1 (int_pow's products are those of x * x).
enum class PowForm { None, Square, Sqrt, Identity };
PowForm pow_form(const Node& n, const ScalarSource& s, DType cd) {
  if (s.param[0] >= 0) return PowForm::None;
  const Scalar& e = n.attrs.scalars[0];
  if (is_floating(cd)) {
    const double ed = e.to_double();
    if (ed == 2.0) return PowForm::Square;
    if (ed == 0.5) return PowForm::Sqrt;
    if (ed == 1.0) return PowForm::Identity;
    return PowForm::None;
  }
  if (e.is_floating()) return PowForm::None;
  if (e.to_int() == 2) return PowForm::Square;
  if (e.to_int() == 1) return PowForm::Identity;
  return PowForm::None;
}

// The dtype the eager kernel of `n` (a pointwise node) computes in, from its inputs' metadata,
// as ops/pointwise.cpp derives it.
DType compute_dtype(const Node& n, std::span<const tracer::ValueMeta* const> inputs) {
  if (n.op == OpId::Cast) return n.meta.dtype;
  if (n.op == OpId::Where || n.op == OpId::MaskedFill) return n.meta.dtype;
  const DTypeRule rule = n.inputs.size() == 1 && binary_expr(n.op) == ExprOp::kCount
                             ? unary_dtype_rule(n.op)
                             : binary_dtype_rule(n.op);
  if (rule != DTypeRule::BoolOut) {
    // Every other rule outputs its compute dtype (BoolIn computes in Bool).
    return rule == DTypeRule::BoolIn ? DType::Bool : n.meta.dtype;
  }
  ResultType rt;  // compares and isnan: the promoted inputs
  for (const tracer::ValueMeta* m : inputs) rt.add(m->dtype, m->sizes.empty());
  if (binary_expr(n.op) != ExprOp::kCount && scalar_side(n.attrs) != kNoScalar)
    rt.add(n.attrs.scalars[0]);
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

int32_t as_type(LoopKernel& k, int32_t id, DType t) {
  return k.exprs[id].type == t ? id : k.cast(id, t);
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
    return od != DType::Bool && inputs.size() == (n.op == OpId::Where ? 3u : 2u) &&
           inputs[cond]->dtype == DType::Bool && target.supports(ExprOp::Select, od);
  }
  const ExprOp u = unary_expr(n.op);
  const ExprOp b = binary_expr(n.op);
  if (u == ExprOp::kCount && b == ExprOp::kCount && n.op != OpId::Clamp &&
      n.op != OpId::PowScalar && n.op != OpId::Isnan && n.op != OpId::LogicalNot)
    return false;
  const DType cd = compute_dtype(n, inputs);
  if (n.op == OpId::LogicalNot || n.op == OpId::LogicalAnd || n.op == OpId::LogicalOr)
    return target.supports(n.op == OpId::LogicalNot ? ExprOp::Not : b, DType::Bool);
  if (cd == DType::Bool) return false;  // Bool arithmetic and compares of Bools stay eager
  if (n.op == OpId::Isnan) return is_floating(cd) && target.supports(ExprOp::Ne, cd);
  if (n.op == OpId::Clamp) return target.supports(ExprOp::Select, cd);
  if (n.op == OpId::PowScalar)
    return pow_form(n, scalars, cd) != PowForm::None && target.supports(ExprOp::Sqrt, cd) &&
           target.supports(ExprOp::Mul, cd);
  if (u != ExprOp::kCount) return (rounds(n.op) && !is_floating(cd)) || target.supports(u, cd);
  return target.supports(b, cd);
}

int32_t lower_node(LoopKernel& k, const Node& n, std::span<const tracer::ValueMeta* const> inputs,
                   std::span<const int32_t> in, const ScalarSource& scalars) {
  const DType od = n.meta.dtype;
  if (n.op == OpId::Cast) return as_type(k, in[0], od);
  if (n.op == OpId::Where)  // cond ? a : b, both converted to the output dtype
    return k.select(in[0], as_type(k, in[1], od), as_type(k, in[2], od));
  if (n.op == OpId::MaskedFill)
    return k.select(in[1], scalar_expr(k, n, scalars, 0, od), as_type(k, in[0], od));
  const DType cd = compute_dtype(n, inputs);
  SmallVector<int32_t, 2> x;  // the inputs in the compute dtype
  for (int32_t id : in) x.push_back(as_type(k, id, cd));
  if (n.op == OpId::LogicalNot) return k.unary(ExprOp::Not, x[0]);
  if (n.op == OpId::Isnan) return k.binary(ExprOp::Ne, x[0], x[0]);  // x != x
  const ExprOp u = unary_expr(n.op);
  if (u != ExprOp::kCount) {
    if (rounds(n.op) && !is_floating(cd)) return x[0];  // integers are integral already
    return k.unary(u, x[0]);
  }
  const ExprOp b = binary_expr(n.op);
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
  switch (pow_form(n, scalars, cd)) {  // PowScalar
    case PowForm::Square:
      return k.binary(ExprOp::Mul, x[0], x[0]);
    case PowForm::Sqrt:
      return k.unary(ExprOp::Sqrt, x[0]);
    default:
      return x[0];
  }
}

}  // namespace kiln::jit
