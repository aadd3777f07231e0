// How the interpreter runs a higher-order node (tracer/hop_nodes.h): its bodies are interpreted
// with the same eager kernels, as the op's eager implementation (tracer/hop/eager.h) would have
// run them, so results stay bitwise those of KILN_JIT=0.
//
// A planner may run bodies another way (the JIT runs each body through a plan of its own:
// jit/plan/body_plans.h); the control flow around them (which branch, how many steps, how
// results stack) is this file's in either case.
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::tracer {

struct InterpreterPlan;

// Runs body k of a higher-order node on its arguments and returns the body's outputs; throws
// what the body throws.
using BodyRunner = std::function<std::vector<Tensor>(size_t k, std::vector<Tensor> args)>;

// Runs node `n` on its input tensors, each body through `run_body`. Returns the tuple of
// results. Throws what a body throws.
std::vector<Tensor> run_hop_node(const Node& n, const BodyRunner& run_body,
                                 std::span<const Tensor> inputs);

// The same with every body interpreted; `bodies` are the plans of n.subgraphs.
std::vector<Tensor> run_hop_node(const Node& n, std::span<const InterpreterPlan> bodies,
                                 std::span<const Tensor> inputs);

}  // namespace kiln::tracer
