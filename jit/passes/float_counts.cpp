#include "jit/passes/float_counts.h"

#include "runtime/dispatcher.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

// The elementwise arithmetic a count may feed: each converts an integer operand to its float
// compute type, which is its output type.
bool float_arithmetic(const Node& r) {
  switch (r.op) {
    case OpId::Add:
    case OpId::Sub:
    case OpId::Mul:
    case OpId::Div:
    case OpId::Maximum:
    case OpId::Minimum:
      return is_floating(r.meta.dtype) && r.subgraphs.empty();
    default:
      return false;
  }
}

}  // namespace

int float_counts(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  // Most graphs count nothing: then the per-value tables below are not worth building.
  bool any_sum = false;
  for (const Node& n : g.nodes)
    any_sum = any_sum || (n.op == OpId::Sum && n.meta.dtype == DType::Int64);
  if (!any_sum) return 0;
  const std::vector<const ValueMeta*> meta = pg.metas();
  const std::vector<uint8_t> is_output = pg.output_flags();
  const std::vector<std::vector<int32_t>> readers = pg.readers();
  // Per node: the count it reads, rewritten (its float sum), or -1.
  std::vector<ValueId> float_sum(static_cast<size_t>(g.num_values()), -1);
  NodeListBuilder out(pg);
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    Node n = g.nodes[j];
    // A reader of a rewritten count reads it cast to its own float type.
    for (ValueId& v : n.inputs) {
      if (float_sum[v] < 0) continue;
      Attrs a;
      a.dtype = n.meta.dtype;
      ValueMeta m = fresh_meta(meta[v]->sizes, n.meta.dtype, n.meta.device);
      v = out.add(OpId::Cast, a, {float_sum[v]}, std::move(m));
    }
    const bool count_of_mask =
        n.op == OpId::Sum && n.inputs.size() == 1 && meta[n.inputs[0]]->dtype == DType::Bool &&
        n.meta.dtype == DType::Int64 && n.meta.device == Device::cpu() && n.meta.strides.empty() &&
        !is_output[n.output] && !pg.has_runtime_scalar(j) && !readers[n.output].empty();
    bool ok = count_of_mask;
    if (ok)
      for (int32_t r : readers[n.output])
        ok = ok && float_arithmetic(g.nodes[static_cast<size_t>(r)]);
    if (!ok) {
      out.keep_as(j, std::move(n));
      continue;
    }
    Attrs a;
    a.dtype = DType::Float64;
    const ValueId m = n.inputs[0];
    const ValueId f =
        out.add(OpId::Cast, a, {m}, fresh_meta(meta[m]->sizes, DType::Float64, n.meta.device));
    n.inputs[0] = f;
    n.meta = fresh_meta(n.meta.sizes, DType::Float64, n.meta.device);
    const ValueId old = n.output;
    n.output = out.next()++;
    float_sum.resize(static_cast<size_t>(out.next()), -1);
    float_sum[old] = n.output;
    out.keep_as(j, std::move(n));
    ++count;
  }
  out.commit();
  return count;
}

}  // namespace kiln::jit::passes
