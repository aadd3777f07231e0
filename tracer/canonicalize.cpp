#include "tracer/canonicalize.h"

#include <utility>

namespace kiln::tracer {

CanonicalGraph canonicalize(Graph& g) {
  const auto nvalues = static_cast<size_t>(g.num_values());
  // Liveness, backwards from the outputs.
  std::vector<uint8_t> live(nvalues, 0);
  for (ValueId v : g.outputs) live[v] = 1;
  std::vector<uint8_t> node_live(g.nodes.size(), 0);
  for (size_t j = g.nodes.size(); j-- > 0;) {
    const Node& n = g.nodes[j];
    if (!live[n.output] && !(op_def(n.op).flags & kChecksData)) continue;
    node_live[j] = 1;
    for (ValueId v : n.inputs) live[v] = 1;
  }

  CanonicalGraph out;
  out.graph.nodes.reserve(g.nodes.size());
  std::vector<ValueId> renumber(nvalues, kNoValue);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const GraphInput& in = g.inputs[i];
    if (!live[in.id]) continue;
    renumber[in.id] = out.graph.add_input(in.meta);
    out.input_origin.push_back(static_cast<int32_t>(i));
  }
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    if (!node_live[j]) continue;
    Node& n = g.nodes[j];
    SmallVector<ValueId, 4> ins;
    for (ValueId v : n.inputs) ins.push_back(renumber[v]);
    renumber[n.output] =
        out.graph.add_node(n.op, n.attrs, std::span<const ValueId>(ins.begin(), ins.size()),
                           std::move(n.meta), std::move(n.subgraphs));
  }
  std::vector<ValueId> outs;
  outs.reserve(g.outputs.size());
  for (ValueId v : g.outputs) outs.push_back(renumber[v]);
  out.graph.set_outputs(outs);
  return out;
}

}  // namespace kiln::tracer
