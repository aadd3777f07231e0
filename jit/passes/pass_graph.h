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
  // Per value: the nodes reading it, in graph order (a node reading it twice, twice).
  std::vector<std::vector<int32_t>> readers() const;
};

// A pass's new node list for a PassGraph, built node by node: nodes kept from the graph (with
// their origin) and nodes the pass adds (origin -1; new values numbered after the graph's).
// commit() installs it. The passes that replace a node by several (decompose, sink_views,
// the column splits) share this skeleton. Nothing is copied while the pass keeps the graph's
// nodes in order: a pass that changes nothing (most passes on most graphs) costs no copy of the
// list (a 1000-node list is 376 KB: copied by every pass, and faulted in anew as the heap was
// trimmed between them, it was two thirds of planning kiln-perf's 1000-add region).
class NodeListBuilder {
 public:
  explicit NodeListBuilder(PassGraph& pg);
  // Node j of the graph, as it is. (A copy: metadata pointers into the graph stay valid until
  // commit().)
  void keep(size_t j);
  // A pass's node op(inputs) of metadata `meta`, defining a new value, or `output` when given (a
  // rewrite's last node takes over the replaced node's value, so its readers stay as they are).
  tracer::ValueId add(OpId op, const Attrs& attrs, SmallVector<tracer::ValueId, 4> inputs,
                      tracer::ValueMeta meta, tracer::ValueId output = -1);
  // A pass's node whose output is already numbered (from next()).
  void add(tracer::Node n);
  // Node j rewritten as `n` (its origin, so its promoted scalars and Philox words, stay).
  void keep_as(size_t j, tracer::Node n);
  // The next unused value id (a pass that numbers values itself advances it).
  int32_t& next() { return next_; }
  // Installs the list in the graph.
  void commit();

 private:
  // From the first change on, the list is built in nodes_ / origin_, starting with the graph's
  // first `same_` nodes.
  void copy_kept();

  PassGraph& pg_;
  size_t same_ = 0;      // the list so far is the graph's nodes [0, same_), not copied yet
  bool copied_ = false;  // nodes_ and origin_ hold the list
  std::vector<tracer::Node> nodes_;
  std::vector<int32_t> origin_;
  int32_t next_;
};

// The metadata of a fresh row-major value: what a pass's new (non-view) node computes.
tracer::ValueMeta fresh_meta(DimVector sizes, DType dtype, Device device);

// The metadata view op `op`'s own meta function gives for an input of metadata `in`.
tracer::ValueMeta view_meta(OpId op, const Attrs& attrs, const tracer::ValueMeta& in);

// Adds the nodes of `indices_of(expand(full([], 0), [classes]))`: 0 .. classes-1 of `dtype`
// (Int32 or Int64) with no value of that shape to take it from, for the rewrites that compare
// classes with per-line indices (scatter_select.h, one_hot_compare.h); constant folding turns
// them into one constant input. `classes` must be fixed by the region key (an attr).
tracer::ValueId add_class_indices(NodeListBuilder& out, int64_t classes, DType dtype,
                                  Device device);

// Rewrites every read of a value through `repl` (repl[v] == v: unchanged). Outputs are not
// rewritten (see the invariants).
void apply_replacements(tracer::Graph& g, const std::vector<tracer::ValueId>& repl);

}  // namespace kiln::jit::passes
