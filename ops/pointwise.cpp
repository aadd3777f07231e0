// Definitions of the pointwise ops (unary, binary with a tensor or a Scalar operand, where,
// masked_fill): PyTorch promotion in the meta functions, the per-ISA inner loops in the kernels.
// Attrs: unary ops with arguments use scalars[0..1] (PowScalar: exponent; Clamp: lo, hi);
// binary ops use ints[0] (ScalarSide) and scalars[0] (the Scalar operand); MaskedFill uses
// scalars[0] (the value).
#include "ops/pointwise.h"

#include "ops/cpu/eager_store_choice.h"
#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/pointwise_table.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "ops/pointwise_rules.h"

namespace kiln {

namespace {

Tensor as_dtype(const Tensor& t, DType d) { return t.impl()->dtype() == d ? t : t.to(d); }

// ---- unary ----

DType unary_compute(const OpCall& c) {
  const TensorImpl* x = c.inputs[0].impl();
  DTypeRule r = unary_dtype_rule(c.op);
  if (c.op == OpId::Square && x->dtype() == DType::Bool) return DType::Int64;
  if (c.op == OpId::PowScalar || c.op == OpId::Clamp) {
    ResultType rt;
    rt.add(c.inputs[0]);
    rt.add(c.attrs.scalars[0]);
    if (c.op == OpId::Clamp) rt.add(c.attrs.scalars[1]);
    DType d = pointwise_compute_dtype(c.op, r, rt.get(), "input");
    if (c.op == OpId::Clamp) {  // the bounds are converted to the compute dtype
      check_scalar_fits("clamp", "min", c.attrs.scalars[0], d);
      check_scalar_fits("clamp", "max", c.attrs.scalars[1], d);
    }
    if (c.op == OpId::PowScalar && is_integral(d)) {
      KILN_CHECK(c.attrs.scalars[0].to_double() >= 0,
                 "pow: integers to negative integer powers are not allowed (input {}, exponent {})",
                 describe(c.inputs[0]), c.attrs.scalars[0].to_double());
    }
    return d;
  }
  return pointwise_compute_dtype(c.op, r, x->dtype(), "input");
}

// The op's name for a timed store trial (its log line), else nothing: op_name and the
// string_view's strlen cost 2% of a small op.
std::string_view trial_name(OpId op, const ChosenLoop& l) {
  return l.pick.timed ? std::string_view(op_name(op)) : std::string_view();
}

void unary_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  m.sizes = x->sizes();
  m.device = x->device();
  m.dtype = pointwise_out_dtype(unary_dtype_rule(c.op), unary_compute(c));
}

void unary_eager(const OpCall& c, const Tensor& out) {
  DType cd = unary_compute(c);
  const Tensor in[] = {as_dtype(c.inputs[0], cd)};
  const PointwiseTable& t = pointwise_table();
  ElementwiseLoop loop(out, in);
  const ChosenLoop l = choose_pointwise_loop(t, c.op, cd, out.impl());
  const StoreTrial trial(l.choice, l.pick, out.numel(), trial_name(c.op, l),
                         logging::Subsystem::Ops);
  loop.run(l.fn, c.attrs.scalars.data());
}

// ---- binary ----

DType binary_compute(const OpCall& c) {
  ResultType rt;
  for (const Tensor& t : c.inputs) rt.add(t);
  if (c.attrs.ints[0] != kNoScalar) rt.add(c.attrs.scalars[0]);
  DType promoted = rt.get();
  if (c.op == OpId::Sub && promoted == DType::Bool) {
    fail(
        "sub: subtraction of Bool tensors is not supported ({}); use logical_xor or "
        "logical_not",
        c.inputs.size() == 2 ? describe(c.inputs[0]) + " and " + describe(c.inputs[1])
                             : describe(c.inputs[0]));
  }
  return pointwise_compute_dtype(c.op, binary_dtype_rule(c.op), promoted, "inputs");
}

void binary_meta(const OpCall& c, OutputMeta& m) {
  const char* name = op_name(c.op);
  if (c.inputs.size() == 2) {
    m.sizes = broadcast_shapes(name, c.inputs[0].impl()->sizes(), c.inputs[1].impl()->sizes());
    m.device = common_device(name, c.inputs);
  } else {
    m.sizes = c.inputs[0].impl()->sizes();
    m.device = c.inputs[0].impl()->device();
  }
  m.dtype = pointwise_out_dtype(binary_dtype_rule(c.op), binary_compute(c));
}

// A Scalar converted to the compute dtype, in storage the loop can point at.
struct ScalarBuffer {
  alignas(8) unsigned char bytes[8];
  ScalarBuffer(const Scalar& s, DType d) {
    visit_dtype(d, [&]<class T>(TypeTag<T>) { *reinterpret_cast<T*>(bytes) = s.to<T>(); });
  }
};

void binary_eager(const OpCall& c, const Tensor& out) {
  DType cd = binary_compute(c);
  const PointwiseTable& t = pointwise_table();
  const ChosenLoop l = choose_pointwise_loop(t, c.op, cd, out.impl());
  const StoreTrial trial(l.choice, l.pick, out.numel(), trial_name(c.op, l),
                         logging::Subsystem::Ops);
  const InnerLoop fn = l.fn;
  auto side = static_cast<ScalarSide>(c.attrs.ints[0]);
  if (side == kNoScalar) {
    const Tensor in[] = {as_dtype(c.inputs[0], cd), as_dtype(c.inputs[1], cd)};
    ElementwiseLoop(out, in).run(fn, nullptr);
    return;
  }
  ScalarBuffer sb(c.attrs.scalars[0], cd);
  Tensor x = as_dtype(c.inputs[0], cd);
  // The scalar's slot gets a placeholder tensor; the loop points it at the buffer instead.
  const Tensor in[] = {x, x};
  const void* scalars[2] = {nullptr, nullptr};
  scalars[side == kScalarRight ? 1 : 0] = sb.bytes;
  ElementwiseLoop(out, in, scalars).run(fn, nullptr);
}

// ---- where / masked_fill ----

void where_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& cond = c.inputs[0];
  KILN_CHECK(cond.impl()->dtype() == DType::Bool,
             "where: the condition must be a Bool tensor, got {}", describe(cond));
  m.sizes = broadcast_all("where", c.inputs);
  m.device = common_device("where", c.inputs);
  ResultType rt;
  rt.add(c.inputs[1]);
  rt.add(c.inputs[2]);
  m.dtype = rt.get();
}

void where_eager(const OpCall& c, const Tensor& out) {
  DType d = out.impl()->dtype();
  const Tensor in[] = {c.inputs[0], as_dtype(c.inputs[1], d), as_dtype(c.inputs[2], d)};
  ElementwiseLoop(out, in).run(pointwise_table().where[int(d)], nullptr);
}

void masked_fill_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& x = c.inputs[0];
  const Tensor& mask = c.inputs[1];
  KILN_CHECK(mask.impl()->dtype() == DType::Bool,
             "masked_fill: the mask must be a Bool tensor, got {}", describe(mask));
  // Out of place the input broadcasts against the mask, as in libtorch; in place (masked_fill_)
  // dispatch_into then requires the result to have the input's shape.
  m.sizes = broadcast_shapes("masked_fill", x.impl()->sizes(), mask.impl()->sizes());
  m.dtype = x.impl()->dtype();
  check_scalar_fits("masked_fill", "value", c.attrs.scalars[0], m.dtype);
  m.device = common_device("masked_fill", c.inputs);
}

void masked_fill_eager(const OpCall& c, const Tensor& out) {
  ElementwiseLoop(out, c.inputs)
      .run(pointwise_table().masked_fill[int(out.impl()->dtype())], c.attrs.scalars.data());
}

}  // namespace

void register_pointwise_ops() {
  constexpr OpId unary[] = {OpId::Neg,        OpId::Abs,       OpId::Exp,   OpId::Log,
                            OpId::Log1p,      OpId::Expm1,     OpId::Sqrt,  OpId::Rsqrt,
                            OpId::Reciprocal, OpId::Sin,       OpId::Cos,   OpId::Tanh,
                            OpId::Sigmoid,    OpId::Relu,      OpId::Silu,  OpId::Erf,
                            OpId::Floor,      OpId::Ceil,      OpId::Round, OpId::Sign,
                            OpId::Gelu,       OpId::GeluTanh,  OpId::Isnan, OpId::LogicalNot,
                            OpId::Square,     OpId::PowScalar, OpId::Clamp};
  for (OpId id : unary) register_op(id, {op_name(id), unary_meta, unary_eager, kWritesAnyLayout});
  constexpr OpId binary[] = {OpId::Add, OpId::Sub,        OpId::Mul,      OpId::Div,
                             OpId::Pow, OpId::Maximum,    OpId::Minimum,  OpId::Eq,
                             OpId::Ne,  OpId::Lt,         OpId::Le,       OpId::Gt,
                             OpId::Ge,  OpId::LogicalAnd, OpId::LogicalOr};
  for (OpId id : binary)
    register_op(id, {op_name(id), binary_meta, binary_eager, kWritesAnyLayout});
  register_op(OpId::Where, {"where", where_meta, where_eager, kWritesAnyLayout});
  register_op(OpId::MaskedFill,
              {"masked_fill", masked_fill_meta, masked_fill_eager, kWritesAnyLayout});
}

// ---- call helpers ----

Tensor unary_op(OpId id, const Tensor& x) {
  const Tensor in[] = {x};
  return dispatch(id, in, Attrs{});
}

Tensor unary_op(OpId id, const Tensor& x, const Scalar& p0, const Scalar& p1) {
  Attrs a;
  a.scalars = {p0, p1};
  const Tensor in[] = {x};
  return dispatch(id, in, a);
}

Tensor binary_op(OpId id, const Tensor& a, const Tensor& b) {
  const Tensor in[] = {a, b};
  return dispatch(id, in, Attrs{});
}

Tensor binary_op(OpId id, const Tensor& a, const Scalar& b, ScalarSide side) {
  Attrs at;
  at.ints[0] = side;
  at.scalars[0] = b;
  const Tensor in[] = {a};
  return dispatch(id, in, at);
}

void binary_op_(OpId id, Tensor& self, const Tensor& b) {
  const Tensor in[] = {self, b};
  dispatch_into(id, in, Attrs{}, self);
}

void binary_op_(OpId id, Tensor& self, const Scalar& b) {
  Attrs at;
  at.ints[0] = kScalarRight;
  at.scalars[0] = b;
  const Tensor in[] = {self};
  dispatch_into(id, in, at, self);
}

void unary_op_(OpId id, Tensor& self, const Scalar& p0, const Scalar& p1) {
  Attrs a;
  a.scalars = {p0, p1};
  const Tensor in[] = {self};
  dispatch_into(id, in, a, self);
}

}  // namespace kiln
