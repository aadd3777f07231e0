// Public pointwise functions, their Tensor method forms and the operators.
#include <cmath>
#include <string>

#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/pointwise.h"

namespace kiln {

namespace {
// alpha * b for add/sub, computed in the dtype of the result (PyTorch: a float alpha is an error
// for integral results, a bool alpha for non-Bool ones; b is scaled in the result's precision).
Tensor scaled_by_alpha(const char* op, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha == Scalar(1) || !a.defined() || !b.defined()) return b;
  ResultType rt;
  rt.add(a);
  rt.add(b);
  DType d = rt.get();
  KILN_CHECK(is_floating(d) || !alpha.is_floating(),
             "{}: alpha {} must not be a floating-point number for integral inputs ({} and {})", op,
             alpha.to_double(), describe(a), describe(b));
  KILN_CHECK(alpha.category() != DTypeCategory::Bool || d == DType::Bool,
             "{}: a Bool alpha is only supported for Bool results ({} and {})", op, describe(a),
             describe(b));
  Tensor s = mul(b.to(d), alpha);
  return s.impl()->dtype() == d ? s : s.to(d);  // Bool * int alpha gives Int64
}

// The API takes double bounds; whole-number bounds count as integers, as the literals in
// clamp(x, 0, 6) do in libtorch, so an integer tensor stays integral (and clamp_ works on it).
Scalar bound(double v) {
  bool whole = std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.0e15;
  return whole ? Scalar(static_cast<int64_t>(v)) : Scalar(v);
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha == Scalar(1)) return binary_op(OpId::Add, a, b);
  return binary_op(OpId::Add, a, scaled_by_alpha("add", a, b, alpha));
}
Tensor add(const Tensor& a, const Scalar& b) { return binary_op(OpId::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha == Scalar(1)) return binary_op(OpId::Sub, a, b);
  return binary_op(OpId::Sub, a, scaled_by_alpha("sub", a, b, alpha));
}
Tensor sub(const Tensor& a, const Scalar& b) { return binary_op(OpId::Sub, a, b); }
Tensor rsub(const Tensor& a, const Scalar& b) { return binary_op(OpId::Sub, a, b, kScalarLeft); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(OpId::Mul, a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return binary_op(OpId::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(OpId::Div, a, b); }
Tensor div(const Tensor& a, const Scalar& b) { return binary_op(OpId::Div, a, b); }
Tensor rdiv(const Tensor& a, const Scalar& b) { return binary_op(OpId::Div, a, b, kScalarLeft); }

Tensor neg(const Tensor& x) { return unary_op(OpId::Neg, x); }
Tensor abs(const Tensor& x) { return unary_op(OpId::Abs, x); }
Tensor exp(const Tensor& x) { return unary_op(OpId::Exp, x); }
Tensor log(const Tensor& x) { return unary_op(OpId::Log, x); }
Tensor log1p(const Tensor& x) { return unary_op(OpId::Log1p, x); }
Tensor expm1(const Tensor& x) { return unary_op(OpId::Expm1, x); }
Tensor sqrt(const Tensor& x) { return unary_op(OpId::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(OpId::Rsqrt, x); }
Tensor reciprocal(const Tensor& x) { return unary_op(OpId::Reciprocal, x); }
Tensor sin(const Tensor& x) { return unary_op(OpId::Sin, x); }
Tensor cos(const Tensor& x) { return unary_op(OpId::Cos, x); }
Tensor tanh(const Tensor& x) { return unary_op(OpId::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(OpId::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary_op(OpId::Relu, x); }
Tensor silu(const Tensor& x) { return unary_op(OpId::Silu, x); }
Tensor erf(const Tensor& x) { return unary_op(OpId::Erf, x); }
Tensor floor(const Tensor& x) { return unary_op(OpId::Floor, x); }
Tensor ceil(const Tensor& x) { return unary_op(OpId::Ceil, x); }
Tensor round(const Tensor& x) { return unary_op(OpId::Round, x); }
Tensor sign(const Tensor& x) { return unary_op(OpId::Sign, x); }
Tensor square(const Tensor& x) { return unary_op(OpId::Square, x); }
Tensor isnan(const Tensor& x) { return unary_op(OpId::Isnan, x); }
Tensor logical_not(const Tensor& x) { return unary_op(OpId::LogicalNot, x); }
Tensor pow(const Tensor& x, const Scalar& e) { return unary_op(OpId::PowScalar, x, e); }
Tensor pow(const Tensor& x, const Tensor& e) { return binary_op(OpId::Pow, x, e); }
Tensor pow(const Scalar& b, const Tensor& e) { return binary_op(OpId::Pow, e, b, kScalarLeft); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(OpId::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(OpId::Minimum, a, b); }
Tensor clamp(const Tensor& x, double lo, double hi) {
  return unary_op(OpId::Clamp, x, bound(lo), bound(hi));
}
Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate == "none") return unary_op(OpId::Gelu, x);
  if (approximate == "tanh") return unary_op(OpId::GeluTanh, x);
  fail("gelu: approximate='{}' is not supported; expected 'none' or 'tanh'", approximate);
}
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const Tensor in[] = {cond, a, b};
  return dispatch(OpId::Where, in, Attrs{});
}
Tensor eq(const Tensor& a, const Tensor& b) { return binary_op(OpId::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op(OpId::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op(OpId::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op(OpId::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op(OpId::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op(OpId::Ge, a, b); }
Tensor eq(const Tensor& a, const Scalar& b) { return binary_op(OpId::Eq, a, b); }
Tensor ne(const Tensor& a, const Scalar& b) { return binary_op(OpId::Ne, a, b); }
Tensor lt(const Tensor& a, const Scalar& b) { return binary_op(OpId::Lt, a, b); }
Tensor le(const Tensor& a, const Scalar& b) { return binary_op(OpId::Le, a, b); }
Tensor gt(const Tensor& a, const Scalar& b) { return binary_op(OpId::Gt, a, b); }
Tensor ge(const Tensor& a, const Scalar& b) { return binary_op(OpId::Ge, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary_op(OpId::LogicalAnd, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary_op(OpId::LogicalOr, a, b); }
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  Attrs a;
  a.scalars[0] = value;
  const Tensor in[] = {x, mask};
  return dispatch(OpId::MaskedFill, in, a);
}

// ---- methods ----
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor Tensor::mul(const Tensor& o) const { return kiln::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return kiln::div(*this, o); }
Tensor Tensor::neg() const { return kiln::neg(*this); }
Tensor Tensor::abs() const { return kiln::abs(*this); }
Tensor Tensor::exp() const { return kiln::exp(*this); }
Tensor Tensor::log() const { return kiln::log(*this); }
Tensor Tensor::log1p() const { return kiln::log1p(*this); }
Tensor Tensor::expm1() const { return kiln::expm1(*this); }
Tensor Tensor::sqrt() const { return kiln::sqrt(*this); }
Tensor Tensor::rsqrt() const { return kiln::rsqrt(*this); }
Tensor Tensor::reciprocal() const { return kiln::reciprocal(*this); }
Tensor Tensor::sin() const { return kiln::sin(*this); }
Tensor Tensor::cos() const { return kiln::cos(*this); }
Tensor Tensor::tanh() const { return kiln::tanh(*this); }
Tensor Tensor::sigmoid() const { return kiln::sigmoid(*this); }
Tensor Tensor::relu() const { return kiln::relu(*this); }
Tensor Tensor::silu() const { return kiln::silu(*this); }
Tensor Tensor::erf() const { return kiln::erf(*this); }
Tensor Tensor::floor() const { return kiln::floor(*this); }
Tensor Tensor::ceil() const { return kiln::ceil(*this); }
Tensor Tensor::round() const { return kiln::round(*this); }
Tensor Tensor::sign() const { return kiln::sign(*this); }
Tensor Tensor::square() const { return kiln::square(*this); }
Tensor Tensor::pow(const Scalar& e) const { return kiln::pow(*this, e); }
Tensor Tensor::pow(const Tensor& e) const { return kiln::pow(*this, e); }
Tensor Tensor::clamp(double lo, double hi) const { return kiln::clamp(*this, lo, hi); }
Tensor Tensor::maximum(const Tensor& o) const { return kiln::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return kiln::minimum(*this, o); }
Tensor Tensor::gelu(const std::string& approximate) const { return kiln::gelu(*this, approximate); }
Tensor Tensor::isnan() const { return kiln::isnan(*this); }
Tensor Tensor::logical_not() const { return kiln::logical_not(*this); }
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& v) const {
  return kiln::masked_fill(*this, mask, v);
}

// ---- in place ----
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  binary_op_(OpId::Add, *this, scaled_by_alpha("add_", *this, o, alpha));
  return *this;
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  binary_op_(OpId::Sub, *this, scaled_by_alpha("sub_", *this, o, alpha));
  return *this;
}
Tensor& Tensor::mul_(const Tensor& o) { return binary_op_(OpId::Mul, *this, o), *this; }
Tensor& Tensor::div_(const Tensor& o) { return binary_op_(OpId::Div, *this, o), *this; }
Tensor& Tensor::add_(const Scalar& s) { return binary_op_(OpId::Add, *this, s), *this; }
Tensor& Tensor::sub_(const Scalar& s) { return binary_op_(OpId::Sub, *this, s), *this; }
Tensor& Tensor::mul_(const Scalar& s) { return binary_op_(OpId::Mul, *this, s), *this; }
Tensor& Tensor::div_(const Scalar& s) { return binary_op_(OpId::Div, *this, s), *this; }
Tensor& Tensor::clamp_(double lo, double hi) {
  return unary_op_(OpId::Clamp, *this, bound(lo), bound(hi)), *this;
}
Tensor& Tensor::relu_() { return unary_op_(OpId::Relu, *this), *this; }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  Attrs a;
  a.scalars[0] = value;
  const Tensor in[] = {*this, mask};
  dispatch_into(OpId::MaskedFill, in, a, *this);
  return *this;
}

// ---- operators ----
// The operators skip the alpha handling of add/sub: they are the hottest entry points.
Tensor operator+(const Tensor& a, const Tensor& b) { return binary_op(OpId::Add, a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return binary_op(OpId::Sub, a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return rdiv(b, a); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }

}  // namespace kiln
