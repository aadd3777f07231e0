// Backward rules of the pointwise ops (ops/pointwise.cpp). Each writes the gradient of every
// input that needs one, with kiln ops; broadcasting is undone with sum_to.
#include <cmath>
#include <numbers>

#include "ops/functions.h"
#include "ops/grad_utils.h"
#include "ops/pointwise.h"
#include "runtime/error.h"

namespace kiln {

namespace {

using Grads = std::span<Tensor>;

const Tensor& in(const BackwardCall& c, size_t i) { return c.inputs[i]; }
const DimVector& shape_of(const BackwardCall& c, size_t i) { return c.input_info[i].sizes; }
bool has_scalar(const BackwardCall& c) { return c.attrs.ints[0] != kNoScalar; }
bool scalar_left(const BackwardCall& c) { return c.attrs.ints[0] == kScalarLeft; }
const Scalar& scalar(const BackwardCall& c) { return c.attrs.scalars[0]; }

// Gradients for the two operands of a binary op (or the one tensor of a tensor-Scalar op).
void set2(const BackwardCall& c, Grads g, const Tensor& ga, const Tensor& gb) {
  if (c.needs_input(0) && ga.defined()) g[0] = sum_to(ga, shape_of(c, 0));
  if (!has_scalar(c) && c.needs_input(1) && gb.defined()) g[1] = sum_to(gb, shape_of(c, 1));
}

void add_bw(const BackwardCall& c, Grads g) { set2(c, g, c.grad, c.grad); }

void sub_bw(const BackwardCall& c, Grads g) {
  if (has_scalar(c)) return set2(c, g, scalar_left(c) ? neg(c.grad) : c.grad, {});
  set2(c, g, c.grad, c.needs_input(1) ? neg(c.grad) : Tensor());
}

void mul_bw(const BackwardCall& c, Grads g) {
  if (has_scalar(c)) return set2(c, g, mul(c.grad, scalar(c)), {});
  set2(c, g, c.needs_input(0) ? c.grad * in(c, 1) : Tensor(),
       c.needs_input(1) ? c.grad * in(c, 0) : Tensor());
}

void div_bw(const BackwardCall& c, Grads g) {
  const Tensor& y = c.output;
  if (has_scalar(c)) {
    // a / s  or  s / a (whose derivative is -s / a^2 = -y / a)
    return set2(c, g, scalar_left(c) ? neg(c.grad * y / in(c, 0)) : div(c.grad, scalar(c)), {});
  }
  set2(c, g, c.needs_input(0) ? c.grad / in(c, 1) : Tensor(),
       c.needs_input(1) ? neg(c.grad * y / in(c, 1)) : Tensor());
}

// d/da a^b = b a^(b-1) (0 where b == 0); d/db a^b = a^b log a (0 where a == 0 and b >= 0).
void pow_bw(const BackwardCall& c, Grads g) {
  const Tensor& y = c.output;
  if (has_scalar(c)) {
    if (scalar_left(c)) {  // s ^ e: only the exponent tensor is input 0
      double s = scalar(c).to_double();
      Tensor ge = c.grad * y * std::log(s);
      // 0 ^ e is constant (0, or 1 at e = 0) for e >= 0: its gradient there is 0, not 0 * -inf.
      if (s == 0.0) ge = where(in(c, 0) >= 0.0, zeros_like(y), ge);
      return set2(c, g, ge, {});
    }
    return set2(c, g, {}, {});
  }
  const Tensor& a = in(c, 0);
  const Tensor& b = in(c, 1);
  Tensor ga, gb;
  if (c.needs_input(0)) ga = where(b == 0.0, zeros_like(y), c.grad * b * pow(a, b - 1.0));
  if (c.needs_input(1))
    gb = where(logical_and(a == 0.0, b >= 0.0), zeros_like(y), c.grad * y * log(a));
  set2(c, g, ga, gb);
}

void pow_scalar_bw(const BackwardCall& c, Grads g) {
  double e = c.attrs.scalars[0].to_double();
  if (e == 0.0) return set2(c, g, zeros_like(c.grad), {});
  set2(c, g, c.grad * e * pow(in(c, 0), e - 1.0), {});
}

// Ties split the gradient evenly, as PyTorch does.
void max_min_bw(const BackwardCall& c, Grads g) {
  const Tensor& a = in(c, 0);
  const Tensor& b = in(c, 1);
  bool is_max = c.op == OpId::Maximum;
  Tensor a_wins = is_max ? a > b : a < b;
  Tensor tie = a == b;
  Tensor half = c.grad * 0.5;
  Tensor zero = zeros_like(c.grad);
  Tensor ga = where(a_wins, c.grad, where(tie, half, zero));
  Tensor gb = where(logical_or(a_wins, tie), where(tie, half, zero), c.grad);
  set2(c, g, ga, gb);
}

void unary_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const Tensor& gy = c.grad;
  const Tensor& y = c.output;
  const Tensor& x = c.inputs[0];
  constexpr double kInvSqrtPi2 = 2.0 / 1.7724538509055160273;  // 2/sqrt(pi)
  Tensor r;
  switch (c.op) {
    case OpId::Neg:
      r = neg(gy);
      break;
    case OpId::Abs:
      r = gy * sign(x);
      break;
    case OpId::Exp:
      r = gy * y;
      break;
    case OpId::Log:
      r = gy / x;
      break;
    case OpId::Log1p:
      r = gy / (x + 1.0);
      break;
    case OpId::Expm1:
      r = gy * (y + 1.0);
      break;
    case OpId::Sqrt:
      r = gy / (y * 2.0);
      break;
    case OpId::Rsqrt:
      r = gy * y * y * y * -0.5;
      break;
    case OpId::Reciprocal:
      r = neg(gy * y * y);
      break;
    case OpId::Sin:
      r = gy * cos(x);
      break;
    case OpId::Cos:
      r = neg(gy * sin(x));
      break;
    case OpId::Tanh:
      r = gy * rsub(y * y, 1.0);
      break;
    case OpId::Sigmoid:
      r = gy * y * rsub(y, 1.0);
      break;
    case OpId::Relu:
      r = where(y > 0.0, gy, zeros_like(gy));
      break;
    case OpId::Silu: {
      Tensor s = sigmoid(x);
      r = gy * s * (x * rsub(s, 1.0) + 1.0);
      break;
    }
    case OpId::Erf:
      r = gy * exp(neg(x * x)) * kInvSqrtPi2;
      break;
    case OpId::Floor:
    case OpId::Ceil:
    case OpId::Round:
    case OpId::Sign:
      r = zeros_like(gy);
      break;
    case OpId::Square:
      r = gy * x * 2.0;
      break;
    case OpId::Gelu: {
      // d/dx x Φ(x) = Φ(x) + x φ(x)
      Tensor cdf = (erf(x * 0.70710678118654752440) + 1.0) * 0.5;
      Tensor pdf = exp(x * x * -0.5) * 0.39894228040143267794;
      r = gy * (cdf + x * pdf);
      break;
    }
    case OpId::GeluTanh: {
      constexpr double k = 0.79788456080286535588, c3 = 0.044715;
      Tensor x2 = x * x;
      Tensor t = tanh((x + x2 * x * c3) * k);
      Tensor dinner = (x2 * (3.0 * c3) + 1.0) * k;
      r = gy * ((t + 1.0) * 0.5 + x * rsub(t * t, 1.0) * dinner * 0.5);
      break;
    }
    case OpId::Clamp: {
      Tensor inside = logical_and(x >= c.attrs.scalars[0], x <= c.attrs.scalars[1]);
      r = where(inside, gy, zeros_like(gy));
      break;
    }
    default:
      fail("backward of {}: no rule", op_name(c.op));
  }
  g[0] = r;
}

void where_bw(const BackwardCall& c, Grads g) {
  const Tensor& cond = c.inputs[0];
  Tensor zero = zeros_like(c.grad);
  if (c.needs_input(1)) g[1] = sum_to(where(cond, c.grad, zero), shape_of(c, 1));
  if (c.needs_input(2)) g[2] = sum_to(where(cond, zero, c.grad), shape_of(c, 2));
}

void masked_fill_bw(const BackwardCall& c, Grads g) {
  if (c.needs_input(0)) g[0] = sum_to(masked_fill(c.grad, c.inputs[1], 0), shape_of(c, 0));
}

void copy_bw(const BackwardCall& c, Grads g) {
  if (c.needs_input(0)) g[0] = c.grad;
}

}  // namespace

void register_pointwise_backward() {
  set_backward(OpId::Add, add_bw, 0);
  set_backward(OpId::Sub, sub_bw, 0);
  set_backward(OpId::Mul, mul_bw, save_input(0) | save_input(1));
  set_backward(OpId::Div, div_bw, save_input(0) | save_input(1) | kSaveOutput);
  set_backward(OpId::Pow, pow_bw, save_input(0) | save_input(1) | kSaveOutput);
  set_backward(OpId::PowScalar, pow_scalar_bw, save_input(0));
  set_backward(OpId::Maximum, max_min_bw, save_input(0) | save_input(1));
  set_backward(OpId::Minimum, max_min_bw, save_input(0) | save_input(1));
  // Rules that read the output save it; the others save the input.
  for (OpId id : {OpId::Exp, OpId::Expm1, OpId::Sqrt, OpId::Rsqrt, OpId::Reciprocal, OpId::Tanh,
                  OpId::Sigmoid, OpId::Relu})
    set_backward(id, unary_bw, kSaveOutput);
  for (OpId id : {OpId::Abs, OpId::Log, OpId::Log1p, OpId::Sin, OpId::Cos, OpId::Silu, OpId::Erf,
                  OpId::Square, OpId::Gelu, OpId::GeluTanh, OpId::Clamp})
    set_backward(id, unary_bw, save_input(0));
  for (OpId id : {OpId::Neg, OpId::Floor, OpId::Ceil, OpId::Round, OpId::Sign})
    set_backward(id, unary_bw, 0);
  set_backward(OpId::Where, where_bw, save_input(0));
  set_backward(OpId::MaskedFill, masked_fill_bw, save_input(1));
  set_backward(OpId::Copy, copy_bw, 0);
  set_backward(OpId::Cast, copy_bw, 0);
}

}  // namespace kiln
