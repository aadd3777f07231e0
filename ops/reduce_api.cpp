// Public reduction functions and their Tensor method forms (attrs layout: see ops/reduce.cpp).
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "runtime/dispatcher.h"

namespace kiln {

namespace {

Tensor reduce_op(OpId id, const Tensor& x, IntList dims, bool keepdim, bool unbiased = false) {
  Attrs a;
  a.dims = dims.dims();
  a.ints[0] = keepdim;
  a.ints[1] = unbiased;
  const Tensor in[] = {x};
  return dispatch(id, in, a);
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce_op(OpId::Sum, x, {}, false); }
Tensor sum(const Tensor& x, IntList dims, bool keepdim) {
  return reduce_op(OpId::Sum, x, dims, keepdim);
}
Tensor mean(const Tensor& x) { return reduce_op(OpId::Mean, x, {}, false); }
Tensor mean(const Tensor& x, IntList dims, bool keepdim) {
  return reduce_op(OpId::Mean, x, dims, keepdim);
}
Tensor prod(const Tensor& x) { return reduce_op(OpId::Prod, x, {}, false); }
Tensor prod(const Tensor& x, IntList dims, bool keepdim) {
  return reduce_op(OpId::Prod, x, dims, keepdim);
}
Tensor amax(const Tensor& x) { return reduce_op(OpId::Amax, x, {}, false); }
Tensor amax(const Tensor& x, IntList dims, bool keepdim) {
  return reduce_op(OpId::Amax, x, dims, keepdim);
}
Tensor amin(const Tensor& x) { return reduce_op(OpId::Amin, x, {}, false); }
Tensor amin(const Tensor& x, IntList dims, bool keepdim) {
  return reduce_op(OpId::Amin, x, dims, keepdim);
}
Tensor logsumexp(const Tensor& x) { return reduce_op(OpId::Logsumexp, x, {}, false); }
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim) {
  return reduce_op(OpId::Logsumexp, x, dims, keepdim);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce_op(OpId::Argmax, x, {dim}, keepdim);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce_op(OpId::Argmin, x, {dim}, keepdim);
}
Tensor var(const Tensor& x, IntList dims, bool unbiased, bool keepdim) {
  return reduce_op(OpId::Var, x, dims, keepdim, unbiased);
}
// std = sqrt(var): a composite, so it gets autograd and tracing through var and sqrt.
Tensor std(const Tensor& x, IntList dims, bool unbiased, bool keepdim) {
  KILN_CHECK(x.defined(), "std: input is an undefined tensor");
  KILN_CHECK(is_floating(x.dtype()),
             "std: expected a floating point input, got {} (std is only defined for Float32 "
             "and Float64; convert the input with .to(kFloat32))",
             describe(x));
  return sqrt(var(x, dims, unbiased, keepdim));
}
Tensor all(const Tensor& x) { return reduce_op(OpId::All, x, {}, false); }
Tensor any(const Tensor& x) { return reduce_op(OpId::Any, x, {}, false); }

Tensor Tensor::sum() const { return kiln::sum(*this); }
Tensor Tensor::sum(IntList dims, bool keepdim) const { return kiln::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return kiln::mean(*this); }
Tensor Tensor::mean(IntList dims, bool keepdim) const { return kiln::mean(*this, dims, keepdim); }
Tensor Tensor::prod() const { return kiln::prod(*this); }
Tensor Tensor::prod(IntList dims, bool keepdim) const { return kiln::prod(*this, dims, keepdim); }
Tensor Tensor::amax() const { return kiln::amax(*this); }
Tensor Tensor::amax(IntList dims, bool keepdim) const { return kiln::amax(*this, dims, keepdim); }
Tensor Tensor::amin() const { return kiln::amin(*this); }
Tensor Tensor::amin(IntList dims, bool keepdim) const { return kiln::amin(*this, dims, keepdim); }
Tensor Tensor::logsumexp(IntList dims, bool keepdim) const {
  return kiln::logsumexp(*this, dims, keepdim);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return kiln::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(int64_t dim, bool keepdim) const { return kiln::argmin(*this, dim, keepdim); }
Tensor Tensor::var(IntList dims, bool unbiased, bool keepdim) const {
  return kiln::var(*this, dims, unbiased, keepdim);
}
Tensor Tensor::std(IntList dims, bool unbiased, bool keepdim) const {
  return kiln::std(*this, dims, unbiased, keepdim);
}
Tensor Tensor::all() const { return kiln::all(*this); }
Tensor Tensor::any() const { return kiln::any(*this); }

}  // namespace kiln
