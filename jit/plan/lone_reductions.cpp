#include "jit/plan/lone_reductions.h"

#include "jit/lower/lower_reduce.h"
#include "runtime/dispatcher.h"

namespace kiln::jit::planning {

std::vector<uint8_t> lone_sums_of_leaves(const tracer::Graph& g,
                                         const std::vector<const tracer::ValueMeta*>& meta) {
  const size_t nv = meta.size();
  std::vector<int32_t> producer(nv, -1), readers(nv, 0);
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    producer[g.nodes[j].output] = static_cast<int32_t>(j);
    for (tracer::ValueId v : g.nodes[j].inputs) ++readers[v];
  }
  // Reductions a row or column kernel computes, by their input's sizes: kernels over the same
  // index space may take several (`x.sum(-1) + y.sum(-1)`: one kernel reading both rows).
  auto fused_reduction = [&](const tracer::Node& n) {
    return n.inputs.size() == 1 && (row_reduction_dims(n, *meta[n.inputs[0]]) > 0 ||
                                    column_reduction_dims(n, *meta[n.inputs[0]]).reduced > 0);
  };
  std::vector<const DimVector*> reduced_sizes;
  for (const tracer::Node& n : g.nodes)
    if (fused_reduction(n)) reduced_sizes.push_back(&meta[n.inputs[0]]->sizes);
  auto shares_index_space = [&](const tracer::Node& n) {
    int same = 0;
    for (const DimVector* s : reduced_sizes) same += *s == meta[n.inputs[0]]->sizes;
    return same > 1;
  };
  std::vector<uint8_t> lone(g.nodes.size(), 0);
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const tracer::Node& n = g.nodes[j];
    if ((n.op != OpId::Sum && n.op != OpId::Mean) || n.inputs.size() != 1 || !n.subgraphs.empty() ||
        n.meta.device != Device::cpu() || !is_floating(n.meta.dtype) ||
        row_reduction_dims(n, *meta[n.inputs[0]]) == 0 || shares_index_space(n))
      continue;
    tracer::ValueId v = n.inputs[0];
    while (readers[v] == 1 && producer[v] >= 0) {
      const tracer::Node& p = g.nodes[static_cast<size_t>(producer[v])];
      if (!(op_def(p.op).flags & kIsView) || p.inputs.size() != 1 || !p.subgraphs.empty()) break;
      v = p.inputs[0];
    }
    lone[j] = readers[v] == 1 && producer[v] < 0 && is_floating(meta[v]->dtype);
  }
  return lone;
}

}  // namespace kiln::jit::planning
