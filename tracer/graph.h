// The graph IR of the tracer (DESIGN.md, "Tracer"): what a flushed segment becomes. A Graph is
// SSA: every value is defined exactly once, either as a graph input (a materialized tensor the
// segment reads) or as the output of one node. A node is exactly one dispatched op call: the
// OpId, the Attrs and the input values the dispatcher saw, and the OutputMeta its meta function
// decided. Replaying the nodes in order through the same eager kernels (run_eager) therefore
// computes bitwise what eager mode computed.
//
// Value ids are dense ints allocated by the builders (0, 1, 2, ... in definition order), so side
// tables indexed by ValueId are plain vectors. Passes may edit the public members directly
// (remove nodes, rewire inputs); verify() then checks that the result is still well formed. The
// builders do no checking of their own: the recorder calls them once per op on the hot path.
#pragma once
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/dispatcher.h"
#include "runtime/op_list.h"
#include "runtime/small_vector.h"
#include "runtime/tensor_impl.h"  // contiguous_strides: what empty ValueMeta::strides mean

namespace kiln::tracer {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// The metadata of a value. Graph inputs always carry their strides and storage offset (the
// materialized tensor's geometry); node outputs carry strides/offset only for view ops (empty
// strides: a fresh row-major tensor), exactly as the meta function filled them in.
using ValueMeta = OutputMeta;

// The op's name as users call it ("add", "log_softmax"): op_name() in snake_case, whichever
// spelling op_name() uses. The printer, DOT export and error messages all use it.
std::string op_display_name(OpId op);

// The metadata of a tensor as a graph value: sizes, dtype, device, strides and offset.
ValueMeta meta_of(const TensorImpl* t);

struct GraphInput {
  ValueId id = kNoValue;
  ValueMeta meta;
};

class Graph;

// The bodies of a higher-order node (cond branches, a loop body), shared by the node's copies.
// Bodies are never edited once recorded, and graphs are copied whole several times on their way
// to a plan (the region cache's key, the passes' working graph, the plan's own), so a copy of a
// node shares its bodies instead of copying every body's nodes: a model of 48 `region` layers
// records 48 call nodes of one body, and its first call copied that body hundreds of times.
struct SubgraphList;

class Subgraphs {
 public:
  Subgraphs() = default;
  Subgraphs(std::vector<Graph> bodies);  // NOLINT(google-explicit-constructor): as the vector
  Subgraphs(std::initializer_list<Graph> bodies);  // NOLINT(google-explicit-constructor)
  bool empty() const { return list_ == nullptr; }
  size_t size() const;
  const Graph& operator[](size_t i) const;
  const Graph* begin() const;
  const Graph* end() const;
  // Appends a body (to a copy of the list, which other nodes may share).
  void push_back(Graph body);

  // Body i's id in the canonical encoding's table of bodies for key kind k (graph_hash.cpp), or
  // 0 where none was set yet; set once per body and kind, on the shared list.
  static constexpr int kKeyKinds = 6;
  uint64_t body_id(size_t i, int k) const;
  void set_body_id(size_t i, int k, uint64_t id) const;

 private:
  std::shared_ptr<const SubgraphList> list_;  // null: no bodies
};

struct Node {
  OpId op{};
  Attrs attrs;
  SmallVector<ValueId, 4> inputs;  // in the op's argument order
  ValueId output = kNoValue;
  ValueMeta meta;  // of `output`
  // Bodies of a higher-order op (cond branches, a loop body). Each is self-contained: its value
  // ids are its own, and its inputs are bound by the op (node inputs, then lifted captures).
  Subgraphs subgraphs;
};

class Graph {
 public:
  std::vector<GraphInput> inputs;
  std::vector<Node> nodes;  // in topological (= execution) order
  std::vector<ValueId> outputs;

  // Number of value ids handed out so far; every id in the graph is in [0, num_values()).
  int32_t num_values() const { return next_value_; }

  // Adds a graph input. `meta.strides` empty means row-major; they are filled in here so that
  // an input always states its geometry.
  ValueId add_input(ValueMeta meta);
  ValueId add_input(const DimVector& sizes, DType dtype, Device device = Device::cpu());
  // Appends a node computing `op(inputs; attrs)` with output metadata `meta`; returns its value.
  ValueId add_node(OpId op, const Attrs& attrs, std::span<const ValueId> inputs, ValueMeta meta,
                   Subgraphs subgraphs = {});
  ValueId add_node(OpId op, const Attrs& attrs, std::initializer_list<ValueId> inputs,
                   ValueMeta meta, Subgraphs subgraphs = {}) {
    return add_node(op, attrs, std::span<const ValueId>(inputs.begin(), inputs.size()),
                    std::move(meta), std::move(subgraphs));
  }
  void set_outputs(std::span<const ValueId> outputs);
  void set_outputs(std::initializer_list<ValueId> outs) {
    set_outputs(std::span<const ValueId>(outs.begin(), outs.size()));
  }

  // For passes that append nodes to `nodes` directly (numbering them themselves): every id is
  // below `n`.
  void set_num_values(int32_t n) { next_value_ = n; }

  // Empties the graph but keeps its memory (the recorder reuses one graph per segment).
  void clear() {
    inputs.clear();
    nodes.clear();
    outputs.clear();
    next_value_ = 0;
  }

  // The metadata of a value (linear in the graph size: for tests, printers and error paths).
  // Throws kiln::Error if `id` is not defined in this graph.
  const ValueMeta& meta(ValueId id) const;

  // Checks that the graph is well formed, recursively into subgraphs: every id in range and
  // defined exactly once, every use after its definition, outputs defined, metadata consistent
  // (strides of the right rank). Throws kiln::Error naming the node and the value.
  void verify() const;

 private:
  int32_t next_value_ = 0;
};

// The storage Subgraphs share: the bodies, and their ids per key kind (0: not set yet).
struct SubgraphList {
  std::vector<Graph> graphs;
  std::unique_ptr<std::atomic<uint64_t>[]> ids;  // graphs.size() * Subgraphs::kKeyKinds
};

inline size_t Subgraphs::size() const { return list_ ? list_->graphs.size() : 0; }
inline const Graph& Subgraphs::operator[](size_t i) const { return list_->graphs[i]; }
inline const Graph* Subgraphs::begin() const { return list_ ? list_->graphs.data() : nullptr; }
inline const Graph* Subgraphs::end() const {
  return list_ ? list_->graphs.data() + list_->graphs.size() : nullptr;
}
inline uint64_t Subgraphs::body_id(size_t i, int k) const {
  return list_->ids[i * kKeyKinds + static_cast<size_t>(k)].load(std::memory_order_acquire);
}
inline void Subgraphs::set_body_id(size_t i, int k, uint64_t id) const {
  list_->ids[i * kKeyKinds + static_cast<size_t>(k)].store(id, std::memory_order_release);
}

}  // namespace kiln::tracer
