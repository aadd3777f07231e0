// Dead-code elimination: drops the nodes whose values reach no output, with the recorder's rules
// (tracer/canonicalize.h): a node that validates data (kChecksData), or a higher-order node whose
// bodies hold one, stays so that its error still surfaces; a dead random node goes (its Philox
// words are then unused). Every input stays (RunArgs binds them by position), and values are
// renumbered densely: input i is value i, node j is value (#inputs + j).
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many nodes were dropped.
int dce(PassGraph& pg);

}  // namespace kiln::jit::passes
