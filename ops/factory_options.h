// Applies the parts of TensorOptions a factory does not pass to its op: requires_grad.
#pragma once
#include "runtime/tensor.h"

namespace kiln {

inline Tensor with_grad_option(Tensor t, const TensorOptions& opts) {
  if (opts.requires_grad()) t.requires_grad_(true);
  return t;
}

}  // namespace kiln
