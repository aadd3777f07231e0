// Decomposition of composite ops into primitives (ops/decomposition.h: the entries, each exact).
// A composite that is already a loop-IR primitive stays one (gelu is one inline expression, and
// its chain would only add work); a node is decomposed where that exposes fusion: it does not
// lower into a kernel of the target (jit/lower/lowering.h) and every primitive of its entry does,
// as an expression or as the mask of a where / masked_fill (isnan(x) -> x != x, which a
// masked_fill then computes inside its kernel). `force` decomposes every node that has an entry
// (tests: the primitives' fused kernel must still give the eager bits).
// Nodes with a promoted scalar, random nodes, views and higher-order nodes are left alone.
#pragma once
#include "jit/passes/pass_graph.h"
#include "jit/target.h"

namespace kiln::jit::passes {

// Returns how many nodes were decomposed.
int decompose(PassGraph& pg, const KernelTarget& target, bool force);

}  // namespace kiln::jit::passes
