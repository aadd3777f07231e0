#include "ops/optim/optimizer.h"

#include "runtime/error.h"

namespace kiln::optim {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    KILN_CHECK(params_[i].defined(), "optimizer: parameter {} is an undefined tensor", i);
    KILN_CHECK(params_[i].is_leaf(),
               "optimizer: parameter {} is not a leaf tensor (it is the result of an op); "
               "optimize the leaf it was computed from",
               i);
  }
}

Tensor Optimizer::checked_grad(const char* optimizer, size_t i) const {
  const Tensor& p = params_[i];
  Tensor g = p.grad();
  if (!g.defined()) return g;
  KILN_CHECK(g.sizes() == p.sizes() && g.dtype() == p.dtype(),
             "{}: the gradient of parameter {} has shape {} {} but the parameter has shape {} {}",
             optimizer, i, shape_str(g.sizes()), g.dtype(), shape_str(p.sizes()), p.dtype());
  return g;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) {
    if (p.grad().defined()) p.mutable_grad() = Tensor();
  }
}

}  // namespace kiln::optim
