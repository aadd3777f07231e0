// Constant folding: a node whose inputs are all known (factories: fill, arange, linspace, eye;
// then anything computed from them alone) is run once by its eager kernel while planning, and
// its value becomes a constant of the plan: an extra graph input, after the original ones, that
// the plan passes itself (PassGraph::constants). The bits are the interpreter's (the same kernel
// on the same inputs). A folded subgraph reads no graph input, so its sizes come from attrs,
// which the region key holds: the constant fits every recording the plan runs.
// Never folded: random nodes, nodes that validate data, higher-order nodes, nodes with promoted
// scalars (they change between runs), off-CPU nodes, values past the size limits, and graph
// outputs (an output must be a fresh tensor on every run; its node stays and reads the
// constants).
#pragma once
#include <cstdint>

#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

struct FoldLimits {
  int64_t max_bytes = 64 << 10;       // of one folded value
  int64_t max_total_bytes = 1 << 20;  // of every value folded in one graph
};

// Returns how many nodes were folded.
int fold_constants(PassGraph& pg, const FoldLimits& limits);

}  // namespace kiln::jit::passes
