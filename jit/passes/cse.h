// Common subexpression elimination: a node computing the same op with the same attrs (scalars
// compared bit for bit: 0.0 and -0.0 differ) on the same inputs with the same output metadata as
// an earlier node reads that node's value instead. The graph is functional (the recorder turned
// in-place writes into new values), so equal nodes compute equal bits, views included (equal
// metadata: equal geometry over the same input).
// Never merged: random nodes (each draws its own numbers), nodes that validate data
// (kChecksData: each surfaces its error), higher-order nodes, nodes with promoted scalars (their
// recorded scalars are not their values), and a duplicate whose value is a graph output (two
// outputs would share one tensor).
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many nodes now read an earlier equal node (dce() drops them).
int cse(PassGraph& pg);

}  // namespace kiln::jit::passes
