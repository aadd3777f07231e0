// The pre-norm transformer block shared by the block and compile_layers workloads, forward only:
//   x = x + proj(attention(split_heads(qkv(layer_norm(x)))))    (causal attention)
//   x = x + fc2(gelu_tanh(fc1(layer_norm(x))))                  (MLP 4x wide)
// Its weights are a plain list of tensors so that compile_layers can pass them to a region as
// arguments (not captured).
#pragma once
#include <cstdint>

#include "kiln/kiln.h"

namespace kiln::perf {

// ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b.
inline constexpr size_t kBlockWeightCount = 12;

// Weights of one block of width d: unit layer norms, zero biases, N(0, 1/fan_in) matrices from the
// global generator (seed it first for reproducible weights).
TensorList make_block_weights(int64_t d);

// One block on x [batch, seq, d] with `heads` heads; w as make_block_weights made it.
Tensor transformer_block(const Tensor& x, const TensorList& w, int64_t heads);

// Raises kiln::Error unless y has x's shape and every element is finite (a whole block has no
// scalar reference); `what` names the workload.
void check_block_output(const char* what, const Tensor& x, const Tensor& y);

}  // namespace kiln::perf
