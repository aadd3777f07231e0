// Helpers shared by backward rules (all written with kiln ops, so recording sees them).
#pragma once
#include "runtime/dispatcher.h"
#include "runtime/tensor.h"

namespace kiln {

// Sums a broadcast gradient back down to `shape` (the inverse of broadcasting).
Tensor sum_to(const Tensor& grad, const DimVector& shape);

// Zeros of `shape` with the gradient's dtype and device (a CUDA gradient gets CUDA zeros: a
// rule must never build a CPU tensor next to a device gradient).
Tensor zeros_like_grad(const DimVector& shape, const Tensor& grad);

// Registers every op family's backward rules (called from register_all_ops()).
void register_pointwise_backward();
void register_view_backward();
void register_index_backward();
void register_reduce_backward();
void register_matmul_backward();  // ops/matmul_backward.cpp
void register_nn_backward();      // ops/nn_backward.cpp

}  // namespace kiln
