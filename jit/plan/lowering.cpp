#include "jit/plan/lowering.h"

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
    default:
      return ExprOp::kCount;
  }
}

// pow(x, e) with a baked exponent the eager functor special-cases (PowScalarF).
enum class PowForm { None, Square, Sqrt, Identity };
PowForm pow_form(const Node& n, const ScalarSource& s) {
  if (s.param[0] >= 0) return PowForm::None;
  const double e = n.attrs.scalars[0].to_double();
  if (e == 2.0) return PowForm::Square;
  if (e == 0.5) return PowForm::Sqrt;
  if (e == 1.0) return PowForm::Identity;
  return PowForm::None;
}

// A scalar of the node as the expression the eager kernel would use: the value converted to
// the dtype (Scalar::to<T>), or the kernel parameter it was promoted to.
int32_t scalar_expr(LoopKernel& k, const Node& n, const ScalarSource& s, int i) {
  if (s.param[i] >= 0) return k.param(s.param[i]);
  const Scalar& v = n.attrs.scalars[static_cast<size_t>(i)];
  const double d = k.dtype == DType::Float32 ? static_cast<double>(v.to<float>()) : v.to<double>();
  return k.constant(d);
}

}  // namespace

bool lowers(const Node& n, std::span<const tracer::ValueMeta* const> inputs,
            const ScalarSource& scalars, const KernelTarget& target) {
  const DType d = n.meta.dtype;
  if ((d != DType::Float32 && d != DType::Float64) || !n.subgraphs.empty() ||
      n.meta.device != Device::cpu() || !n.meta.strides.empty())
    return false;
  for (const tracer::ValueMeta* m : inputs)
    if (m->dtype != d || m->device != Device::cpu()) return false;
  // Inputs already in the output dtype: the eager kernel computes in it when the op's rule says
  // so (a float Scalar operand of a float tensor does not promote it).
  auto computes_in_d = [&](DTypeRule rule) {
    return pointwise_out_dtype(rule, d) == d &&
           (rule == DTypeRule::Floating || rule == DTypeRule::Numeric || rule == DTypeRule::Any);
  };
  const ExprOp u = unary_expr(n.op);
  if (u != ExprOp::kCount) return computes_in_d(unary_dtype_rule(n.op)) && target.supports(u, d);
  if (binary_expr(n.op) != ExprOp::kCount)
    return computes_in_d(binary_dtype_rule(n.op)) && target.supports(binary_expr(n.op), d);
  if (n.op == OpId::Clamp) return target.supports(ExprOp::Select, d);
  if (n.op == OpId::PowScalar) {
    const PowForm f = pow_form(n, scalars);
    return f != PowForm::None && target.supports(ExprOp::Sqrt, d);
  }
  return false;
}

bool lowers_mask(const Node& c, std::span<const tracer::ValueMeta* const> inputs, DType d,
                 const KernelTarget& target) {
  const ExprOp op = binary_expr(c.op);
  if (!expr_is_compare(op) || c.meta.device != Device::cpu() || !c.subgraphs.empty()) return false;
  for (const tracer::ValueMeta* m : inputs)
    if (m->dtype != d || m->device != Device::cpu()) return false;
  return target.supports(op, d) && target.supports(ExprOp::Select, d);
}

bool lowers_select(const Node& n, std::span<const tracer::ValueMeta* const> inputs,
                   const KernelTarget& target) {
  const DType d = n.meta.dtype;
  if ((n.op != OpId::Where && n.op != OpId::MaskedFill) ||
      (d != DType::Float32 && d != DType::Float64) || n.meta.device != Device::cpu())
    return false;
  const size_t cond = n.op == OpId::Where ? 0 : 1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DType want = i == cond ? DType::Bool : d;
    if (inputs[i]->dtype != want || inputs[i]->device != Device::cpu()) return false;
  }
  return target.supports(ExprOp::Select, d);
}

int32_t lower_node(LoopKernel& k, const Node& n, std::span<const int32_t> in,
                   const ScalarSource& scalars) {
  const ExprOp u = unary_expr(n.op);
  if (u != ExprOp::kCount) return k.unary(u, in[0]);
  if (n.op == OpId::Where) return k.select(in[0], in[1], in[2]);  // cond ? a : b
  if (n.op == OpId::MaskedFill) return k.select(in[1], scalar_expr(k, n, scalars, 0), in[0]);
  const ExprOp b = binary_expr(n.op);
  if (b != ExprOp::kCount) {
    switch (scalar_side(n.attrs)) {
      case kScalarRight:
        return k.binary(b, in[0], scalar_expr(k, n, scalars, 0));
      case kScalarLeft:
        return k.binary(b, scalar_expr(k, n, scalars, 0), in[0]);
      default:
        return k.binary(b, in[0], in[1]);
    }
  }
  if (n.op == OpId::Clamp) {  // v = x < lo ? lo : x; v > hi ? hi : v
    const int32_t lo = scalar_expr(k, n, scalars, 0), hi = scalar_expr(k, n, scalars, 1);
    const int32_t v = k.select(k.binary(ExprOp::Lt, in[0], lo), lo, in[0]);
    return k.select(k.binary(ExprOp::Gt, v, hi), hi, v);
  }
  switch (pow_form(n, scalars)) {  // PowScalar
    case PowForm::Square:
      return k.binary(ExprOp::Mul, in[0], in[0]);
    case PowForm::Sqrt:
      return k.unary(ExprOp::Sqrt, in[0]);
    default:
      return in[0];
  }
}

}  // namespace kiln::jit
