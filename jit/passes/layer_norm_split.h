// layer_norm written out as the chain of reductions and pointwise ops that its eager kernel
// computes (ops/reduce.h layer_norm_rows), so that the CPU JIT fuses it into one row kernel with
// its neighbours (a residual add before it, an activation after it). The op itself was an eager
// step: its node has three inputs, and no kernel computed it. Rewritten, for x of dtype T over
// the last k dims (normalized_shape):
//
//   m  = mean(x, last k dims, keepdim)
//   d  = x - m
//   r  = 1.0 / sqrt(mean(d * d, last k dims, keepdim) + eps)
//   y  = (d * r) * w + b                         (w and b where given)
//
// Exact (eager's bits): eager layer_norm computes in T with the mean op's order (pairwise sums
// over the row's chunks, / D) for both the mean and the variance, then 1 / sqrt(var + eps) and
// ((x - mean) * rstd) * w + b: each step is one of these ops, in the same order. (In double, as
// before 2026-12-01, the kernel ran at a Float64 kernel's lanes.) A training step's backward
// (ops/nn_backward.cpp) computes the same mean, deviations and variance: CSE shares them.
//
// Only on the CPU, for a node without a promoted scalar (eps baked into the chain), and where x
// moves along its last k dims as one contiguous run in the first recording (else the planner
// would run the chain as eager steps, slower than the op's own kernel). A later recording with
// other strides (same contiguity class) runs the chain's nodes eagerly, with the same bits.
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many layer_norm nodes were rewritten.
int split_layer_norms(PassGraph& pg);

}  // namespace kiln::jit::passes
