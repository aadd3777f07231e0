#include "jit/passes/fill_broadcast.h"

#include "ops/meta_helpers.h"

namespace kiln::jit::passes {

int broadcast_fills(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  const std::vector<const tracer::ValueMeta*> meta = pg.metas();
  const std::vector<uint8_t> is_output = pg.output_flags();
  std::vector<std::vector<int32_t>> readers(static_cast<size_t>(g.num_values()));
  for (size_t j = 0; j < g.nodes.size(); ++j)
    for (tracer::ValueId v : g.nodes[j].inputs) readers[v].push_back(static_cast<int32_t>(j));

  // Whether reader r gets its output shape from its operands other than v.
  auto shaped_without = [&](const tracer::Node& r, tracer::ValueId v) {
    const uint32_t f = op_def(r.op).flags;
    if (!(f & kWritesAnyLayout) || (f & (kIsView | kHigherOrder)) || !r.subgraphs.empty())
      return false;
    DimVector sizes;
    for (tracer::ValueId u : r.inputs)
      if (u != v) sizes = broadcast_shapes("fill broadcast", sizes, meta[u]->sizes);
    return sizes == r.meta.sizes;
  };

  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    tracer::Node& n = g.nodes[j];
    if (n.op != OpId::Fill || is_output[n.output] || pg.has_runtime_scalar(j) ||
        n.meta.device != Device::cpu() || !n.meta.strides.empty() || readers[n.output].empty())
      continue;
    bool one = true;  // already one element per dim
    for (int64_t s : n.meta.sizes) one = one && s == 1;
    if (one) continue;
    bool ok = true;
    for (int32_t r : readers[n.output]) ok = ok && shaped_without(g.nodes[r], n.output);
    if (!ok) continue;
    n.attrs.dims.assign(n.meta.sizes.size(), 1);
    n.meta.sizes.assign(n.meta.sizes.size(), 1);
    ++count;
  }
  return count;
}

}  // namespace kiln::jit::passes
