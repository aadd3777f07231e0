#include "tracer/canonicalize.h"

#include <algorithm>
#include <utility>

namespace kiln::tracer {

namespace {

// A node whose kernel may raise on data (an index out of range) must run even when its result is
// unused, as it would eagerly; a higher-order node does when any node of its bodies does.
bool checks_data(const Node& n) {
  if (op_def(n.op).flags & kChecksData) return true;
  for (const Graph& body : n.subgraphs)
    for (const Node& inner : body.nodes)
      if (checks_data(inner)) return true;
  return false;
}

// Liveness, backwards from the outputs: per node, whether it runs; `live`, per value, whether a
// running node or an output reads it.
std::vector<uint8_t> live_nodes(const Graph& g, std::vector<uint8_t>& live) {
  live.assign(static_cast<size_t>(g.num_values()), 0);
  for (ValueId v : g.outputs) live[v] = 1;
  std::vector<uint8_t> node_live(g.nodes.size(), 0);
  for (size_t j = g.nodes.size(); j-- > 0;) {
    const Node& n = g.nodes[j];
    if (!live[n.output] && !checks_data(n)) continue;
    node_live[j] = 1;
    for (ValueId v : n.inputs) live[v] = 1;
  }
  return node_live;
}

}  // namespace

bool is_canonical_keeping_inputs(const Graph& g) {
  const size_t ni = g.inputs.size();
  if (static_cast<size_t>(g.num_values()) != ni + g.nodes.size()) return false;
  for (size_t i = 0; i < ni; ++i) {
    const GraphInput& in = g.inputs[i];
    if (in.id != static_cast<ValueId>(i) || (in.meta.strides.empty() && !in.meta.sizes.empty()))
      return false;
  }
  for (size_t j = 0; j < g.nodes.size(); ++j)
    if (g.nodes[j].output != static_cast<ValueId>(ni + j)) return false;
  std::vector<uint8_t> live;
  const std::vector<uint8_t> node_live = live_nodes(g, live);
  return std::find(node_live.begin(), node_live.end(), 0) == node_live.end();
}

CanonicalGraph canonicalize(Graph& g, bool keep_inputs) {
  const auto nvalues = static_cast<size_t>(g.num_values());
  std::vector<uint8_t> live;
  const std::vector<uint8_t> node_live = live_nodes(g, live);

  CanonicalGraph out;
  out.graph.nodes.reserve(g.nodes.size());
  std::vector<ValueId> renumber(nvalues, kNoValue);
  if (keep_inputs) {  // every input, in order: the list moves over whole, renumbered in place
    out.graph.inputs = std::move(g.inputs);
    out.input_origin.resize(out.graph.inputs.size());
    for (size_t i = 0; i < out.graph.inputs.size(); ++i) {
      GraphInput& in = out.graph.inputs[i];
      if (in.meta.strides.empty() && !in.meta.sizes.empty())  // as add_input states them
        in.meta.strides = contiguous_strides(in.meta.sizes);
      renumber[in.id] = static_cast<ValueId>(i);
      in.id = static_cast<ValueId>(i);
      out.input_origin[i] = static_cast<int32_t>(i);
    }
  } else {
    out.graph.inputs.reserve(g.inputs.size());
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      GraphInput& in = g.inputs[i];
      if (!live[in.id]) continue;
      renumber[in.id] = out.graph.add_input(std::move(in.meta));
      out.input_origin.push_back(static_cast<int32_t>(i));
    }
  }
  // Nodes are moved, then renumbered in place (no copy of attrs or metadata).
  int32_t next = static_cast<int32_t>(out.graph.inputs.size());
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    if (!node_live[j]) continue;
    Node& n = out.graph.nodes.emplace_back(std::move(g.nodes[j]));
    out.node_origin.push_back(static_cast<int32_t>(j));
    for (ValueId& v : n.inputs) v = renumber[v];
    renumber[n.output] = next;
    n.output = next++;
  }
  out.graph.set_num_values(next);
  std::vector<ValueId> outs;
  outs.reserve(g.outputs.size());
  for (ValueId v : g.outputs) outs.push_back(renumber[v]);
  out.graph.set_outputs(outs);
  return out;
}

}  // namespace kiln::tracer
