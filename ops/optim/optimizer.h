// Optimizer: what every optimizer shares (the parameters, zero_grad). Updates run under
// NoGradGuard with in-place kiln ops, so a recorded training step includes them.
#pragma once
#include <vector>

#include "runtime/tensor.h"

namespace kiln::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  // Resets every parameter's gradient to undefined (PyTorch's set_to_none=True default).
  void zero_grad();
  virtual void step() = 0;
  const std::vector<Tensor>& parameters() const { return params_; }

 protected:
  // Parameter i's gradient (undefined: skip it), checked against the parameter's shape and dtype
  // so that a wrong one is an error naming `optimizer`, not one of the update's ops.
  Tensor checked_grad(const char* optimizer, size_t i) const;

  std::vector<Tensor> params_;
};

}  // namespace kiln::optim
