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

void Optimizer::zero_grad() {
  for (Tensor& p : params_) {
    if (p.grad().defined()) p.mutable_grad() = Tensor();
  }
}

}  // namespace kiln::optim
