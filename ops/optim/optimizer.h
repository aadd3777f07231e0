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
  std::vector<Tensor> params_;
};

}  // namespace kiln::optim
