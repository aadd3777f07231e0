// one_hot computed as a compare in its readers' kernel. Eager writes one_hot(t, C) as an Int64
// [..., C] tensor (8 bytes an element, mostly zeros) that its reader then loads (`-(one_hot(t,
// C).to(Float32) * log_softmax(z, -1)).sum(-1).mean()`, a hand-written NLL). Rewritten, on the
// CPU, for C > 0:
//
//   k   = one_hot_class(t) {C}                   t as the class dtype, [..., 1], after one_hot's
//                                                checks of its values (the same error;
//                                                kChecksData: it runs though nothing reads it)
//   cls = indices_of(expand(full([], 0), [C]))   0 .. C-1 (Int32 where C fits, else Int64)
//   out = (cls == k).to(Int64)
//
// Exact: 1 where the class is the value, 0 elsewhere, as eager's kernel writes. C is the op's
// attr (in the region key); the index's shape comes from each run's tensor, so the plan stays
// size-generic. (ops/one_hot.cpp.)
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many one_hot nodes were rewritten.
int one_hots_to_compares(PassGraph& pg);

}  // namespace kiln::jit::passes
