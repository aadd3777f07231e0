// How the interpreter runs a higher-order node (tracer/hop_nodes.h): its bodies are interpreted
// with the same eager kernels, as the op's eager implementation (tracer/hop/eager.h) would have
// run them, so results stay bitwise those of KILN_JIT=0.
#pragma once
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::tracer {

struct InterpreterPlan;

// Runs node `n` on its input tensors; `bodies` are the plans of n.subgraphs. Returns the tuple
// of results. Throws what a body throws.
std::vector<Tensor> run_hop_node(const Node& n, std::span<const InterpreterPlan> bodies,
                                 std::span<const Tensor> inputs);

}  // namespace kiln::tracer
