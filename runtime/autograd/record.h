// The dispatcher's hooks into autograd: building a node for an op whose inputs require grad, and
// running an in-place op on tensors that take part in autograd.
#pragma once
#include <span>

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/grad_node.h"
#include "runtime/dispatcher.h"

namespace kiln {

// True when grad mode is on and an input requires grad (the cheap test on the hot path).
inline bool any_requires_grad(std::span<const Tensor> inputs) {
  bool any = false;
  for (const Tensor& t : inputs) any |= t.impl()->requires_grad();
  return any && GradMode::is_enabled();
}

// Where a gradient for `t` goes: its grad_fn at its output_nr, a fresh accumulator for a leaf
// that requires grad, or nothing (an invalid edge) when t does not require grad.
Edge gradient_edge(const Tensor& t);

// Makes `out` the output of a new autograd node for this call (no-op for non-float outputs).
void record_autograd(const OpDef& def, const OpCall& call, const Tensor& out);

// In-place op with autograd: computes the op out of place (recorded), writes the result into
// `out` and moves out's history to the new node. Returns false when grad mode is off (the caller
// then runs the plain in-place path). Raises for a leaf that requires grad and for views.
bool inplace_with_autograd(const OpDef& def, const OpCall& call, Tensor& out);

}  // namespace kiln
