#include "jit/passes/layer_norm_split.h"

#include <utility>

#include "jit/lower/lower_reduce.h"
#include "ops/pointwise.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

bool splittable(const PassGraph& pg, size_t j, const std::vector<const ValueMeta*>& meta) {
  const Node& n = pg.graph.nodes[j];
  if (n.op != OpId::LayerNorm || !n.subgraphs.empty() || pg.has_runtime_scalar(j) ||
      n.meta.device != Device::cpu() || !n.meta.strides.empty() ||
      (n.meta.dtype != DType::Float32 && n.meta.dtype != DType::Float64))
    return false;
  const size_t k = n.attrs.dims.size();
  const bool has_w = n.attrs.ints[0] != 0, has_b = n.attrs.ints[1] != 0;
  if (k == 0 || n.inputs.size() != 1u + has_w + has_b) return false;
  const ValueMeta& x = *meta[n.inputs[0]];
  if (x.device != Device::cpu() || x.dtype != n.meta.dtype || x.sizes.size() < k) return false;
  return trailing_dims_dense(x, k);
}

// Emits the chain for node n; its last node defines n's value.
void emit(NodeListBuilder& out, const Node& n, const ValueMeta& xm) {
  const DType t = n.meta.dtype;
  const int64_t rank = static_cast<int64_t>(xm.sizes.size());
  const int64_t k = static_cast<int64_t>(n.attrs.dims.size());
  DimVector kept = xm.sizes;
  for (int64_t d = rank - k; d < rank; ++d) kept[static_cast<size_t>(d)] = 1;
  auto meta = [&](const DimVector& sizes, DType dt) {
    return fresh_meta(sizes, dt, n.meta.device);
  };
  auto mean = [&](ValueId v) {
    Attrs a;
    for (int64_t d = rank - k; d < rank; ++d) a.dims.push_back(d);
    a.ints[0] = 1;  // keepdim
    a.ints[1] = 0;  // no correction
    return out.add(OpId::Mean, a, {v}, meta(kept, t));
  };
  auto scalar = [&](OpId op, ValueId v, double s, ScalarSide side, const DimVector& sizes) {
    Attrs a;
    a.ints[0] = side;
    a.scalars[0] = Scalar(s);
    return out.add(op, a, {v}, meta(sizes, t));
  };
  const bool has_w = n.attrs.ints[0] != 0, has_b = n.attrs.ints[1] != 0;
  const ValueId x = n.inputs[0];
  const ValueId m = mean(x);
  const ValueId d = out.add(OpId::Sub, Attrs{}, {x, m}, meta(xm.sizes, t));
  const ValueId v = mean(out.add(OpId::Mul, Attrs{}, {d, d}, meta(xm.sizes, t)));
  const ValueId s = out.add(
      OpId::Sqrt, Attrs{},
      {scalar(OpId::Add, v, n.attrs.scalars[0].to<double>(), kScalarRight, kept)}, meta(kept, t));
  const ValueId r = scalar(OpId::Div, s, 1.0, kScalarLeft, kept);
  // The node that defines n's value: the last of the chain.
  const int parts = 1 + has_w + has_b;
  int part = 0;
  auto step = [&](OpId op, ValueId a, ValueId b) {
    const bool last = ++part == parts;
    return out.add(op, Attrs{}, {a, b}, meta(xm.sizes, t), last ? n.output : -1);
  };
  ValueId y = step(OpId::Mul, d, r);
  if (has_w) y = step(OpId::Mul, y, n.inputs[1]);
  if (has_b) y = step(OpId::Add, y, n.inputs[has_w ? 2 : 1]);
}

}  // namespace

int split_layer_norms(PassGraph& pg) {
  const tracer::Graph& g = pg.graph;
  const std::vector<const ValueMeta*> meta = pg.metas();
  NodeListBuilder out(pg);
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    if (!splittable(pg, j, meta)) {
      out.keep(j);
      continue;
    }
    emit(out, g.nodes[j], *meta[g.nodes[j].inputs[0]]);
    ++count;
  }
  if (count > 0) out.commit();
  return count;
}

}  // namespace kiln::jit::passes
