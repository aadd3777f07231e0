#include "jit/passes/cross_entropy_split.h"

#include <algorithm>

#include "jit/lower/lower_reduce.h"
#include "ops/losses.h"
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

// A value of x's shape whose memory a plan has anyway: x itself, or what x is computed from by
// elementwise ops of its shape (`h * 0.5 + b` -> h), back to a graph input or another op's
// result. The count and the class indices read only its shape; taking x there would make the
// kernel computing x store it. (Same shapes hold in every recording the plan runs: the region
// key holds the ranks and size-1 dims.)
ValueId shape_source(const PassGraph& pg, const std::vector<int32_t>& producer,
                     const std::vector<const ValueMeta*>& meta, ValueId x) {
  for (;;) {
    const int32_t j = producer[x];
    if (j < 0) return x;
    const Node& p = pg.graph.nodes[static_cast<size_t>(j)];
    const uint32_t f = op_def(p.op).flags;
    if (!(f & kWritesAnyLayout) || (f & (kIsView | kHigherOrder | kIsRandom)) ||
        !p.subgraphs.empty())
      return x;
    ValueId next = -1;
    for (ValueId u : p.inputs)
      if (meta[u]->sizes == meta[x]->sizes) next = u;
    if (next < 0) return x;
    x = next;
  }
}

// The nodes of a split that read only the graph's inputs or values defined long before the
// op: emitted as early as their inputs allow, so that the planner has the class indices and the
// target's view before the logits' producers and fuses the pick into their row kernel (an eager
// step between them splits it).
struct EarlyValues {
  ValueId like = -1;     // a value of the logits' shape in memory anyway (shape_source)
  int32_t like_at = -1;  // the nodes defining like and the target (-1: graph inputs)
  int32_t target_at = -1;
  ValueId classes = -1, tk = -1, counted = -1;
  // The targets as the class indices' dtype (ops/losses.h class_index_dtype), unsqueezed,
  // compared with them: the same nodes as the gradient's one-hot comparison
  // (ops/nn_backward.cpp), which CSE then shares.
  ValueId tk_index = -1;
  ValueId picked = -1;  // the gathered target logits, where the logits are `like` themselves
};

// Emits what of `ev` the nodes up to `at` have made ready (at -1: before the first node).
void emit_early(NodeListBuilder& out, const Node& n, const ValueMeta& xm, const ValueMeta& tm,
                int32_t at, EarlyValues& ev) {
  auto meta = [&](const DimVector& sizes, DType dt) {
    return fresh_meta(sizes, dt, n.meta.device);
  };
  const bool in_memory = ev.like == n.inputs[0];  // the logits themselves: gathered
  if (in_memory && ev.picked < 0 && std::max(ev.like_at, ev.target_at) == at) {
    DimVector kept = xm.sizes;
    kept.back() = 1;
    ev.picked = out.add(OpId::CrossEntropyTargetLogit, n.attrs, {n.inputs[0], n.inputs[1]},
                        meta(kept, DType::Float64));
  }
  const DType index = class_index_dtype(xm.dtype, xm.sizes.back());
  if (!in_memory && ev.classes < 0 && ev.like_at == at) {
    Attrs a;
    a.dtype = index;
    ev.classes = out.add(OpId::IndicesOf, a, {ev.like}, meta({xm.sizes.back()}, index));
  }
  if (ev.tk < 0 && ev.target_at == at) {
    Attrs unsqueeze;
    unsqueeze.ints[0] = static_cast<int64_t>(xm.sizes.size()) - 1;
    ev.tk = out.add(OpId::Unsqueeze, unsqueeze, {n.inputs[1]},
                    view_meta(OpId::Unsqueeze, unsqueeze, tm));
    ev.tk_index = ev.tk;
    if (!in_memory && index != DType::Int64) {
      Attrs cast;
      cast.dtype = index;
      const ValueMeta cm = meta(tm.sizes, index);
      const ValueId t32 = out.add(OpId::Cast, cast, {n.inputs[1]}, cm);
      ev.tk_index =
          out.add(OpId::Unsqueeze, unsqueeze, {t32}, view_meta(OpId::Unsqueeze, unsqueeze, cm));
    }
  }
  if (ev.counted < 0 && std::max(ev.like_at, ev.target_at) == at)
    ev.counted =
        out.add(OpId::CrossEntropyCount, n.attrs, {ev.like, n.inputs[1]}, meta({}, DType::Float64));
}

// Emits the rest of the chain for node n; its last node defines n's value.
void emit_cross_entropy(NodeListBuilder& out, const Node& n, const ValueMeta& xm,
                        const EarlyValues& ev) {
  const DType t = n.meta.dtype, f64 = DType::Float64;
  const int64_t rank = static_cast<int64_t>(xm.sizes.size());
  const int64_t ignore = n.attrs.ints[0];
  DimVector kept = xm.sizes;  // [N, 1] or [1]
  kept.back() = 1;
  auto meta = [&](const DimVector& sizes, DType dt) {
    return fresh_meta(sizes, dt, n.meta.device);
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
  auto zero_where = [&](ValueId v, ValueId mask, const DimVector& sizes, DType dt) {
    Attrs fill;
    fill.scalars[0] = Scalar(0.0);
    return out.add(OpId::MaskedFill, fill, {v, mask}, meta(sizes, dt));
  };
  auto to_f64 = [&](ValueId v, const DimVector& sizes) {
    if (t == f64) return v;
    Attrs a;
    a.dtype = f64;
    return out.add(OpId::Cast, a, {v}, meta(sizes, f64));
  };
  const ValueId x = n.inputs[0];
  const ValueId mx = reduce(OpId::Amax, x, true, t, kept);
  const ValueId e =
      out.add(OpId::Exp, Attrs{}, {binary(OpId::Sub, x, mx, xm.sizes, t)}, meta(xm.sizes, t));
  const ValueId s = reduce(OpId::Sum, e, true, t, kept);
  const ValueId lse =
      to_f64(binary(OpId::Add, mx, out.add(OpId::Log, Attrs{}, {s}, meta(kept, t)), kept, t), kept);
  const ValueId tk = ev.tk;
  // The target's logit: the row's sum of x where the class is the target, 0 elsewhere (exactly
  // x[t]; an ignored row's target matches no class).
  ValueId picked = ev.picked;
  if (picked < 0) {
    const ValueId other = binary(OpId::Ne, ev.classes, ev.tk_index, xm.sizes, DType::Bool);
    picked = to_f64(reduce(OpId::Sum, zero_where(x, other, xm.sizes, t), true, t, kept), kept);
  }
  Attrs is_ignored;
  is_ignored.ints[0] = kScalarRight;
  is_ignored.scalars[0] = Scalar(ignore);
  const ValueId loss =
      zero_where(binary(OpId::Sub, lse, picked, kept, f64),
                 out.add(OpId::Eq, is_ignored, {tk}, meta(kept, DType::Bool)), kept, f64);
  const ValueId total = reduce(OpId::Sum, loss, false, f64, {});
  const bool cast = t != f64;
  const ValueId mean =
      out.add(OpId::Div, Attrs{}, {total, ev.counted}, meta({}, f64), cast ? -1 : n.output);
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
  const std::vector<int32_t> producer = pg.producers();
  std::vector<EarlyValues> early(g.nodes.size());
  std::vector<size_t> splits;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    if (!splits_cross_entropy(pg, j, meta)) continue;
    const Node& n = g.nodes[j];
    EarlyValues& ev = early[j];
    ev.like = shape_source(pg, producer, meta, n.inputs[0]);
    ev.like_at = producer[ev.like];
    ev.target_at = producer[n.inputs[1]];
    splits.push_back(j);
  }
  if (splits.empty()) return 0;
  NodeListBuilder out(pg);
  auto emit_ready = [&](int32_t at) {
    for (size_t j : splits) {
      const Node& n = g.nodes[j];
      emit_early(out, n, *meta[n.inputs[0]], *meta[n.inputs[1]], at, early[j]);
    }
  };
  emit_ready(-1);
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    if (early[j].like < 0)
      out.keep(j);
    else
      emit_cross_entropy(out, g.nodes[j], *meta[g.nodes[j].inputs[0]], early[j]);
    emit_ready(static_cast<int32_t>(j));
  }
  out.commit();
  return static_cast<int>(splits.size());
}

}  // namespace kiln::jit::passes
