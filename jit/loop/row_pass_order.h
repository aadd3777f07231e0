// The order of a row kernel's Reduce passes. A row kernel makes one pass over each row per
// Reduce, in expression order (loop_kernel.h "Row kernels"), and the last reducing pass may keep
// its costly element values (an exp) in a scratch row for the element pass, which otherwise
// computes them again (jit/cpu/render_reduce.h row_stash: only the last pass's values). Lowered
// node by node, a kernel can end on a cheap Reduce that does not depend on the costly one:
// cross_entropy's forward and backward end on the target logit's masked sum, after the sum of
// the exps, so the element pass computed every exp twice (xent, 2026-12-01).
//
// order_row_passes moves such Reduces forward: it emits the expressions in a topological order
// that takes, whenever a Reduce is next, a ready Reduce whose operand computes no
// transcendental function before one that does (each in expression order). The values, and
// so the bits, are the same: each Reduce folds its own operand in its own fixed order, whatever
// pass it runs in. Kernels whose Reduces already come so (a softmax's max then its exps' sum, a
// layer norm's mean then variance) are returned as they are.
#pragma once
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

LoopKernel order_row_passes(const LoopKernel& k);

}  // namespace kiln::jit
