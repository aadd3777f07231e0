// Reductions that eager computes as gathered rows, rewritten into that gather and a row
// reduction, so that the CPU JIT fuses them.
//
// A reduction over dims that are neither the innermost ones (a row reduction) nor one block
// followed by kept dims (a column reduction) was a single node no kernel computed: batch-norm
// statistics `x.mean({0, 2, 3})` of [N, C, H, W], `x.sum({0, 2})` of [A, B, C]. Eager computes
// it by copying x into a buffer whose rows are the reduced elements, the kept dims first in
// their order and the reduced dims after them sorted by stride, largest first, then reducing
// those rows (ops/cpu/reduce_plan.cpp `plan_reduction`, its gather). For a row-major x (the
// only one rewritten) that order is the dims' own. Rewritten, for x of rank R with k dims
// reduced:
//
//   g = copy(permute(x, kept dims in order, then the reduced dims in order))   (row-major)
//   r = op(g, the last k dims, keepdim = false, the op's other attrs)
//   (keepdim: r unsqueezed at each reduced dim, from the first)
//
// The copy is a pointwise kernel that the planner fuses with x's producers (a prologue that
// eager would have stored and then gathered), and op over the last dims a row kernel, with its
// epilogue. Same bits as eager: the same elements in the same order, reduced by the row
// kernel's eager order (docs/jit.md "Reductions"); a run whose sizes the row kernel declines
// runs both nodes eagerly, in that same order. Two reductions of one x over the same dims
// (mean and var) get equal copies, which cse() merges.
//
// Which dims count: eager drops size-1 dims before it classifies (so [N, C, 1, 1] over
// {0, 2, 3} is a column reduction there). The region key fixes which dims are 1
// (tracer/graph_hash.cpp), so the recorded sizes decide for every run of the plan: a node is
// rewritten only where its reduced dims of size other than 1 are not empty, not the last ones
// and not one block followed by kept dims alone. Sum, mean, prod, amax, amin, var and logsumexp
// (eager's ops over dim sets), on the CPU, where the row reduction lowers
// (lower_reduce.h row_reduction_dims).
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many reductions were rewritten.
int split_gathered_reductions(PassGraph& pg);

}  // namespace kiln::jit::passes
