// The backward engine: runs the graph behind `root` in reverse topological order, summing the
// gradients that reach each node before calling it, and accumulating into leaves' .grad.
#pragma once
#include <span>

#include "runtime/tensor.h"

namespace kiln {

void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph);

// Backward from several roots at once (grads[i] seeds roots[i]; an undefined one means ones for
// a one-element root). Gradients from all roots are summed before any node runs, so a node
// reached from several roots runs once. Used by nodes with several outputs that run a nested
// backward pass (checkpoint).
void run_backward(std::span<const Tensor> roots, std::span<const Tensor> grads, bool retain_graph);

}  // namespace kiln
