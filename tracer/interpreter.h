// The interpreter: runs a canonical graph node by node with the eager kernels (run_eager), so its
// results are bitwise those of eager mode: same kernels, same order, same Philox offsets (random
// nodes carry the offsets reserved when they were recorded). Values are freed after their last
// use, so intermediates live no longer than they must.
#pragma once
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/backend.h"
#include "tracer/graph.h"

namespace kiln::tracer {

// What the interpreter precomputes once per region: after node j, release_after[j] lists the
// values nothing later reads (and that are not outputs). donor[j] is the input position of node j
// whose buffer node j may write its result into (-1: none): an elementwise op (kWritesAnyLayout)
// reading a row-major intermediate of its own shape and dtype that dies at j. Reusing that buffer
// changes no bits (eager in-place ops write the same way) and saves an allocation per op.
// moves[j] has bit k set when node j's input k is the last use of its value (the value table's
// handle is moved into the argument list instead of copied: no reference-count traffic).
// bodies[j] holds the plans of node j's subgraphs (null for an ordinary node): body_plans_of.
struct InterpreterPlan;
using BodyPlans = std::shared_ptr<const std::vector<InterpreterPlan>>;
struct InterpreterPlan {
  std::vector<SmallVector<ValueId, 4>> release_after;
  std::vector<int8_t> donor;
  std::vector<uint64_t> moves;
  std::vector<BodyPlans> bodies;
  std::vector<int32_t> last_use;  // per value: the last node reading it (-1: none, -2: output)
};
InterpreterPlan plan_interpreter(const Graph& g);

// The interpreter plans of each node's bodies (null for a node without any). Nodes that share
// one list of bodies (tracer::Subgraphs: a region's calls, copies of a node) share one list of
// plans: a region called 48 times plans its body once, not 48 times.
std::vector<BodyPlans> body_plans_of(const Graph& g);
// Node j's body plans as a span (empty where there are none).
inline std::span<const InterpreterPlan> body_plans(const std::vector<BodyPlans>& b, size_t j) {
  return b[j] ? std::span<const InterpreterPlan>(*b[j]) : std::span<const InterpreterPlan>();
}

// Runs `g` (canonical numbering) on `inputs` (one per graph input, materialized) and returns its
// outputs in order. A node that throws (an index out of range found by its kernel) poisons its
// value and everything computed from it: those outputs come back undefined and `error` holds
// the first exception; every other output is still computed, as eager mode would have.
// Higher-order nodes run their bodies through tracer/hop_interpreter.h; a view node's geometry is
// computed from its actual input (a body's inputs may sit at another offset on each step).
// (InterpretResult: tracer/backend.h, which plans return too.)
// `destinations` (optional, one per graph output, undefined where none) names memory an output
// must end up in (a mutated input the recorder writes back). When the output's node is
// elementwise and no later read sees that memory's old contents, the node writes there directly
// and the result is the destination itself (the caller's copy-back is then a no-op).
InterpretResult interpret(const Graph& g, const InterpreterPlan& plan,
                          std::span<const Tensor> inputs,
                          std::span<const Tensor> destinations = {});

}  // namespace kiln::tracer
