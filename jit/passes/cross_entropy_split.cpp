#include "jit/passes/cross_entropy_split.h"

#include "jit/lower/lower_reduce.h"
#include "ops/pointwise.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

bool splits_cross_entropy(const PassGraph& pg, size_t j,
                          const std::vector<const ValueMeta*>& meta) {
  const Node& n = pg.graph.nodes[j];
  if (n.op != OpId::CrossEntropy || !n.subgraphs.empty() || pg.has_runtime_scalar(j) ||
      n.meta.device != Device::cpu() || n.inputs.size() != 2 ||
      (n.meta.dtype != DType::Float32 && n.meta.dtype != DType::Float64))
    return false;
  const ValueMeta& x = *meta[n.inputs[0]];
  const ValueMeta& t = *meta[n.inputs[1]];
  if (x.device != Device::cpu() || t.device != Device::cpu() || x.dtype != n.meta.dtype ||
      t.dtype != DType::Int64 || x.sizes.empty() || x.sizes.size() > 2 ||
      t.sizes.size() + 1 != x.sizes.size())
    return false;
  return trailing_dims_dense(x, 1);
}

// Emits the chain for node n; its last node defines n's value.
void emit_cross_entropy(NodeListBuilder& out, const Node& n, const ValueMeta& xm,
                        const ValueMeta& tm) {
  const DType t = n.meta.dtype, f64 = DType::Float64;
  const int64_t rank = static_cast<int64_t>(xm.sizes.size());
  const int64_t ignore = n.attrs.ints[0];
  DimVector kept = xm.sizes;  // [N, 1] or [1]
  kept.back() = 1;
  auto meta = [&](const DimVector& sizes, DType dt) {
    ValueMeta m;
    m.sizes = sizes;
    m.dtype = dt;
    m.device = n.meta.device;
    return m;
  };
  auto reduce = [&](OpId op, ValueId v, bool over_rows, DType dt, const DimVector& sizes) {
    Attrs a;
    if (over_rows) a.dims = {rank - 1};   // else every dim
    a.ints[0] = over_rows ? 1 : 0;        // keepdim
    if (op == OpId::Amax) a.ints[1] = 1;  // no classes: -inf, not an error
    return out.add(op, a, {v}, meta(sizes, dt));
  };
  auto binary = [&](OpId op, ValueId a, ValueId b, const DimVector& sizes, DType dt) {
    return out.add(op, Attrs{}, {a, b}, meta(sizes, dt));
  };
  auto versus_ignore = [&](OpId op, ValueId v, const DimVector& sizes) {
    Attrs a;
    a.ints[0] = kScalarRight;
    a.scalars[0] = Scalar(ignore);
    return out.add(op, a, {v}, meta(sizes, DType::Bool));
  };
  const ValueId x = n.inputs[0], target = n.inputs[1];
  const ValueId p = out.add(OpId::CrossEntropyTargetLogit, n.attrs, {x, target}, meta(kept, f64));
  ValueId xd = x;
  if (t != f64) {
    Attrs a;
    a.dtype = f64;
    xd = out.add(OpId::Cast, a, {x}, meta(xm.sizes, f64));
  }
  const ValueId mx = reduce(OpId::Amax, xd, true, f64, kept);
  const ValueId e =
      out.add(OpId::Exp, Attrs{}, {binary(OpId::Sub, xd, mx, xm.sizes, f64)}, meta(xm.sizes, f64));
  const ValueId s = reduce(OpId::Sum, e, true, f64, kept);
  const ValueId lse =
      binary(OpId::Add, mx, out.add(OpId::Log, Attrs{}, {s}, meta(kept, f64)), kept, f64);
  Attrs unsqueeze;
  unsqueeze.ints[0] = rank - 1;
  const ValueId tk =
      out.add(OpId::Unsqueeze, unsqueeze, {target}, view_meta(OpId::Unsqueeze, unsqueeze, tm));
  Attrs fill;
  fill.scalars[0] = Scalar(0.0);
  const ValueId loss = out.add(
      OpId::MaskedFill, fill,
      {binary(OpId::Sub, lse, p, kept, f64), versus_ignore(OpId::Eq, tk, kept)}, meta(kept, f64));
  const ValueId total = reduce(OpId::Sum, loss, false, f64, {});
  const ValueId counted =
      reduce(OpId::Sum, versus_ignore(OpId::Ne, target, tm.sizes), false, DType::Int64, {});
  const bool cast = t != f64;
  const ValueId mean =
      out.add(OpId::Div, Attrs{}, {total, counted}, meta({}, f64), cast ? -1 : n.output);
  if (cast) {
    Attrs a;
    a.dtype = t;
    out.add(OpId::Cast, a, {mean}, meta({}, t), n.output);
  }
}

}  // namespace

int split_cross_entropies(PassGraph& pg) {
  const tracer::Graph& g = pg.graph;
  const std::vector<const ValueMeta*> meta = pg.metas();
  NodeListBuilder out(pg);
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    if (!splits_cross_entropy(pg, j, meta)) {
      out.keep(j);
      continue;
    }
    const Node& n = g.nodes[j];
    emit_cross_entropy(out, n, *meta[n.inputs[0]], *meta[n.inputs[1]]);
    ++count;
  }
  if (count > 0) out.commit();
  return count;
}

}  // namespace kiln::jit::passes
