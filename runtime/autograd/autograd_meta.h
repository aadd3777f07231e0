// Per-tensor autograd state, allocated only for tensors that take part in autograd.
#pragma once
#include <cstdint>

#include "runtime/autograd/grad_node.h"
#include "runtime/tensor.h"

namespace kiln {

struct AutogradMeta {
  bool requires_grad = false;  // set on leaves by requires_grad_()
  Tensor grad;                 // accumulated gradient (leaves)
  Ref<GradNode> grad_fn;       // the node that produced this tensor (non-leaves)
  uint32_t output_nr = 0;
  bool is_view = false;  // produced by a view op from a tensor that requires grad
};

}  // namespace kiln
