#include "jit/passes/fold_constants.h"

#include "runtime/dispatcher.h"

namespace kiln::jit::passes {

using tracer::Node;
using tracer::ValueId;

int fold_constants(PassGraph& pg, const FoldLimits& limits) {
  tracer::Graph& g = pg.graph;
  const size_t nv = static_cast<size_t>(g.num_values());
  const std::vector<uint8_t> is_output = pg.output_flags();
  std::vector<Tensor> value(nv);  // the known values
  for (size_t k = 0; k < pg.constants.size(); ++k)
    value[g.inputs[static_cast<size_t>(pg.num_original_inputs) + k].id] = pg.constants[k];
  std::vector<uint8_t> folded(g.nodes.size(), 0);
  int64_t total = 0;
  int count = 0;
  EagerModeGuard eager;  // the planner may run on a recording thread
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    const OpDef& def = op_def(n.op);
    if ((def.flags & (kIsRandom | kChecksData | kHigherOrder)) || !n.subgraphs.empty() ||
        pg.has_runtime_scalar(j) || is_output[n.output] || n.meta.device != Device::cpu())
      continue;
    int64_t numel = 1;
    for (int64_t s : n.meta.sizes) numel *= s;
    const int64_t bytes = numel * static_cast<int64_t>(itemsize(n.meta.dtype));
    if (bytes > limits.max_bytes || total + bytes > limits.max_total_bytes) continue;
    bool known = true;
    std::vector<Tensor> ins;
    for (ValueId v : n.inputs) {
      known = known && value[v].defined();
      ins.push_back(value[v]);
    }
    if (!known) continue;
    try {
      const OpCall call{n.op, ins, n.attrs};
      OutputMeta m;
      def.meta(call, m);
      value[n.output] = run_eager(def, call, m);
    } catch (const std::exception&) {  // left to run (and raise) as recorded
      continue;
    }
    folded[j] = 1;
    total += bytes;
    ++count;
  }
  if (count == 0) return 0;
  // The folded values a remaining node reads become constant inputs (same value ids).
  std::vector<uint8_t> exposed(nv, 0);
  for (size_t j = 0; j < g.nodes.size(); ++j)
    if (!folded[j])
      for (ValueId v : g.nodes[j].inputs) exposed[v] = 1;
  std::vector<Node> kept;
  std::vector<int32_t> kept_origin;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const ValueId v = g.nodes[j].output;
    if (!folded[j]) {
      kept.push_back(std::move(g.nodes[j]));
      kept_origin.push_back(pg.origin[j]);
    } else if (exposed[v]) {
      g.inputs.push_back({v, tracer::meta_of(value[v].impl())});
      pg.constants.push_back(value[v]);
    }
  }
  g.nodes = std::move(kept);
  pg.origin = std::move(kept_origin);
  return count;
}

}  // namespace kiln::jit::passes
