// The autograd methods of Tensor: requires_grad_, grad, backward, detach.
#include "runtime/autograd/autograd_meta.h"
#include "runtime/autograd/engine.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace kiln {

Tensor& Tensor::requires_grad_(bool on) {
  TensorImpl& x = const_cast<TensorImpl&>(checked("requires_grad_"));
  AutogradMeta* m = x.autograd();
  KILN_CHECK(!(m && m->grad_fn),
             "requires_grad_: only leaf tensors can change requires_grad; this one ({}) is the "
             "result of an op (use detach() to make a leaf)",
             shape_str(x.sizes()));
  if (!on && !m) return *this;
  KILN_CHECK(!on || is_floating(x.dtype()),
             "requires_grad_: only tensors of a floating dtype can require gradients, got {}",
             x.dtype());
  x.ensure_autograd().requires_grad = on;
  return *this;
}

bool Tensor::requires_grad() const { return checked("requires_grad").requires_grad(); }

bool Tensor::is_leaf() const {
  AutogradMeta* m = checked("is_leaf").autograd();
  return !m || !m->grad_fn;
}

Tensor Tensor::grad() const {
  AutogradMeta* m = checked("grad").autograd();
  return m ? m->grad : Tensor();
}

Tensor& Tensor::mutable_grad() {
  return const_cast<TensorImpl&>(checked("mutable_grad")).ensure_autograd().grad;
}

std::string Tensor::grad_fn_name() const {
  AutogradMeta* m = checked("grad_fn_name").autograd();
  return m && m->grad_fn ? m->grad_fn->name() : std::string();
}

void Tensor::backward(const Tensor& grad, bool retain_graph) const {
  checked("backward");
  run_backward(*this, grad, retain_graph);
}

Tensor Tensor::detach() const {
  const TensorImpl& x = checked("detach");
  return Tensor(make_ref<TensorImpl>(x.sizes(), x.strides(), x.offset(), x.dtype(), x.device(),
                                     x.storage_ref()));
}

}  // namespace kiln
