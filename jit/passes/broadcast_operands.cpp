#include "jit/passes/broadcast_operands.h"

#include "ops/meta_helpers.h"
#include "runtime/dispatcher.h"

namespace kiln::jit::passes {

namespace {

bool elementwise(const tracer::Node& r) {
  const uint32_t f = op_def(r.op).flags;
  return (f & kWritesAnyLayout) && !(f & (kIsView | kHigherOrder)) && r.subgraphs.empty();
}

// Whether elementwise reader r gets its output shape from its operands when operand v is read
// with sizes `v_sizes` (null: not counted at all).
bool shaped_with(const tracer::Node& r, tracer::ValueId v, const DimVector* v_sizes,
                 const std::vector<const tracer::ValueMeta*>& meta) {
  DimVector sizes = v_sizes != nullptr ? *v_sizes : DimVector{};
  for (tracer::ValueId u : r.inputs)
    if (u != v) sizes = broadcast_shapes("operand broadcast", sizes, meta[u]->sizes);
  return sizes == r.meta.sizes;
}

}  // namespace

int broadcast_fills(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  const std::vector<const tracer::ValueMeta*> meta = pg.metas();
  const std::vector<uint8_t> is_output = pg.output_flags();
  const std::vector<std::vector<int32_t>> readers = pg.readers();
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
    for (int32_t r : readers[n.output]) {
      const tracer::Node& rn = g.nodes[r];
      ok = ok && elementwise(rn) && shaped_with(rn, n.output, nullptr, meta);
    }
    if (!ok) continue;
    n.attrs.dims.assign(n.meta.sizes.size(), 1);
    n.meta.sizes.assign(n.meta.sizes.size(), 1);
    ++count;
  }
  return count;
}

int broadcast_expands(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  const std::vector<const tracer::ValueMeta*> meta = pg.metas();
  const std::vector<std::vector<int32_t>> readers = pg.readers();
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const tracer::Node& e = g.nodes[j];
    if (e.op != OpId::Expand || e.meta.device != Device::cpu() || e.inputs.size() != 1) continue;
    const tracer::ValueId u = e.inputs[0];
    const DimVector& us = meta[u]->sizes;
    for (int32_t r : readers[e.output]) {
      tracer::Node& rn = g.nodes[r];
      if (!elementwise(rn) || !shaped_with(rn, e.output, &us, meta)) continue;
      bool one_dtype = true;
      for (tracer::ValueId w : rn.inputs) one_dtype = one_dtype && meta[w]->dtype == e.meta.dtype;
      if (us.empty() && !one_dtype) continue;
      for (tracer::ValueId& w : rn.inputs)
        if (w == e.output) w = u;
      ++count;
    }
  }
  return count;
}

int lift_expands(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  const std::vector<const tracer::ValueMeta*> meta = pg.metas();
  const std::vector<uint8_t> is_output = pg.output_flags();
  const std::vector<std::vector<int32_t>> readers = pg.readers();
  const auto nv = static_cast<size_t>(g.num_values());
  // Whether every reader of v is elementwise: a lifted node's value becomes an expand (stride 0),
  // which a view of it (flatten's view of a copy made to be viewed) cannot take. RecordFuzz seed
  // 25600044 failed so: "view: shape [8] is not compatible with ... stride [0, 4, 4, 1]".
  auto read_elementwise = [&](tracer::ValueId v) {
    for (int32_t r : readers[static_cast<size_t>(v)])
      if (!elementwise(g.nodes[static_cast<size_t>(r)])) return false;
    return true;
  };
  // Per value: the node index of the expand defining it, or -2 - k for the k-th expand made
  // here, or -1.
  std::vector<int32_t> expand_of(nv, -1);
  std::vector<tracer::Node> made;
  std::vector<DimVector> made_sizes;  // per value made here (id - nv): its sizes
  auto sizes_of = [&](tracer::ValueId v) -> const DimVector& {
    return static_cast<size_t>(v) < nv ? meta[v]->sizes : made_sizes[static_cast<size_t>(v) - nv];
  };
  NodeListBuilder out(pg);
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const tracer::Node& n = g.nodes[j];
    if (n.op == OpId::Expand && n.meta.device == Device::cpu() && n.inputs.size() == 1)
      expand_of[n.output] = static_cast<int32_t>(j);
    const int32_t ei = n.inputs.empty() ? -1 : expand_of[n.inputs[0]];
    bool lift = ei != -1 && elementwise(n) && !is_output[n.output] && n.meta.strides.empty() &&
                !(op_def(n.op).flags & (kIsRandom | kChecksData)) && read_elementwise(n.output);
    for (tracer::ValueId v : n.inputs) lift = lift && v == n.inputs[0];
    if (!lift) {
      out.keep(j);
      continue;
    }
    // P over the expand's input, then the expand of that, defining P's value.
    const tracer::Node& e = ei >= 0 ? g.nodes[static_cast<size_t>(ei)] : made[-2 - ei];
    const tracer::ValueId u = e.inputs[0];
    const Attrs attrs = e.attrs;
    tracer::Node p = n;
    for (tracer::ValueId& v : p.inputs) v = u;
    p.meta = fresh_meta(sizes_of(u), n.meta.dtype, n.meta.device);
    p.output = out.next()++;
    made_sizes.push_back(p.meta.sizes);
    tracer::Node x;
    x.op = OpId::Expand;
    x.attrs = attrs;
    x.inputs = {p.output};
    x.output = n.output;
    x.meta = view_meta(OpId::Expand, attrs, p.meta);
    out.keep_as(j, std::move(p));
    made.push_back(x);
    expand_of[n.output] = -1 - static_cast<int32_t>(made.size());
    out.add(std::move(x));
    ++count;
  }
  out.commit();
  return count;
}

}  // namespace kiln::jit::passes
