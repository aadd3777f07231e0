// The graph the JIT's passes rewrite (jit/passes/passes.h), with what ties it to the region's
// original graph: the plan's run arguments (tracer/backend.h RunArgs) are indexed by the original
// graph, so every node remembers the original node it came from (its promoted scalars and Philox
// words follow it), and values folded to constants become extra graph inputs after the original
// ones.
//
// Invariants every pass keeps:
// - The original inputs stay, in order (RunArgs::inputs binds them by position); constants are
//   appended after them. The outputs keep their number and order (RunArgs::destinations), and
//   an output value is never replaced by another value (two outputs would share one tensor, or an
//   output would be an input).
// - A node with a promoted (runtime) scalar keeps it: no pass reads that scalar's recorded value,
//   merges the node or folds it. Random nodes are never merged, folded or decomposed; one whose
//   value nothing reads may be dropped (its Philox words are then unused).
// - Nodes stay in topological order; values are SSA. Passes leave dead nodes for dce() to drop.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/backend.h"
#include "tracer/graph.h"

namespace kiln::jit::passes {

struct PassGraph {
  tracer::Graph graph;
  std::vector<int32_t> origin;    // per node: the original node it came from (-1: a pass's)
  std::vector<uint8_t> promoted;  // per original node: it has a runtime scalar
  int32_t num_original_inputs = 0;
  std::vector<Tensor> constants;  // input num_original_inputs + k holds constants[k]

  // Starts from the original graph and its runtime scalars.
  PassGraph(const tracer::Graph& g, const tracer::RuntimeScalars& runtime);

  // Whether node j carries a promoted scalar (its recorded scalars are not its values).
  bool has_runtime_scalar(size_t j) const { return origin[j] >= 0 && promoted[origin[j]]; }

  // Per value: its metadata (null: undefined), the node defining it (-1: an input), whether it is
  // a graph output. Linear in the graph; passes compute them once.
  std::vector<const tracer::ValueMeta*> metas() const;
  std::vector<int32_t> producers() const;
  std::vector<uint8_t> output_flags() const;
};

// Rewrites every read of a value through `repl` (repl[v] == v: unchanged). Outputs are not
// rewritten (see the invariants).
void apply_replacements(tracer::Graph& g, const std::vector<tracer::ValueId>& repl);

}  // namespace kiln::jit::passes
