#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

using tracer::ValueId;

PassGraph::PassGraph(const tracer::Graph& g, const tracer::RuntimeScalars& runtime)
    : graph(g), num_original_inputs(static_cast<int32_t>(g.inputs.size())) {
  origin.resize(g.nodes.size());
  for (size_t j = 0; j < g.nodes.size(); ++j) origin[j] = static_cast<int32_t>(j);
  promoted.assign(g.nodes.size(), 0);
  for (const tracer::ScalarPosition& p : runtime) promoted[static_cast<size_t>(p.node)] = 1;
}

std::vector<const tracer::ValueMeta*> PassGraph::metas() const {
  std::vector<const tracer::ValueMeta*> m(static_cast<size_t>(graph.num_values()), nullptr);
  for (const tracer::GraphInput& in : graph.inputs) m[in.id] = &in.meta;
  for (const tracer::Node& n : graph.nodes) m[n.output] = &n.meta;
  return m;
}

std::vector<int32_t> PassGraph::producers() const {
  std::vector<int32_t> p(static_cast<size_t>(graph.num_values()), -1);
  for (size_t j = 0; j < graph.nodes.size(); ++j)
    p[graph.nodes[j].output] = static_cast<int32_t>(j);
  return p;
}

std::vector<uint8_t> PassGraph::output_flags() const {
  std::vector<uint8_t> o(static_cast<size_t>(graph.num_values()), 0);
  for (ValueId v : graph.outputs) o[v] = 1;
  return o;
}

void apply_replacements(tracer::Graph& g, const std::vector<ValueId>& repl) {
  for (tracer::Node& n : g.nodes)
    for (ValueId& v : n.inputs)
      while (repl[v] != v) v = repl[v];
}

}  // namespace kiln::jit::passes
