// The backward engine: runs the graph behind `root` in reverse topological order, summing the
// gradients that reach each node before calling it, and accumulating into leaves' .grad.
#pragma once
#include "runtime/tensor.h"

namespace kiln {

void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph);

}  // namespace kiln
