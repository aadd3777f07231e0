#include "jit/passes/column_split.h"

#include <limits>
#include <utility>
#include <vector>

#include "jit/lower/lower_reduce.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

bool softmax_like(OpId op) { return op == OpId::Softmax || op == OpId::LogSoftmax; }

// The attrs of a reduction over softmax node n's one dim (attrs.ints[0]) of a rank-`rank` input,
// keepdim.
Attrs softmax_dim_attrs(const Node& n, size_t rank) {
  Attrs a;
  int64_t d = n.attrs.ints.empty() ? -1 : n.attrs.ints[0];
  if (d < 0) d += static_cast<int64_t>(rank);
  a.dims = {d};
  a.ints = {1, 0};
  return a;
}

// The column dims of var, logsumexp, softmax or log_softmax node n over x, if it is one the
// split applies to ({0, 0} if not).
ColumnDims splittable(const Node& n, const ValueMeta& x, const KernelTarget& target) {
  if ((n.op != OpId::Var && n.op != OpId::Logsumexp && !softmax_like(n.op)) ||
      n.inputs.size() != 1 || !n.subgraphs.empty() || !n.meta.strides.empty() ||
      n.meta.device != Device::cpu() || x.device != Device::cpu() || !is_floating(x.dtype) ||
      x.dtype != n.meta.dtype || !reduces_in_column_order(x))
    return {};
  Node first;  // the first pass: a column reduction when the node is one
  first.op = n.op == OpId::Var ? OpId::Mean : OpId::Amax;
  first.attrs = softmax_like(n.op) ? softmax_dim_attrs(n, x.sizes.size()) : n.attrs;
  first.attrs.ints[1] = 0;
  first.meta = n.meta;
  const ColumnDims c = column_reduction_dims(first, x);
  if (c.reduced == 0 || !target.launches_column_reduction(x.sizes, c.reduced, c.inner)) return {};
  return c;
}

// Emits the rewrite of node n (var or logsumexp over the column dims c of x); its last node
// defines n's value.
class Split {
 public:
  Split(NodeListBuilder& out, const Node& n, ValueId x, const ValueMeta& xm, ColumnDims c)
      : out_(out),
        n_(n),
        x_(x),
        xm_(xm),
        kept_(xm.sizes),
        last_reduced_(static_cast<int64_t>(xm.sizes.size()) - c.inner - 1),
        reduced_(c.reduced) {
    for (int64_t d = last_reduced_; d > last_reduced_ - reduced_; --d)
      kept_[static_cast<size_t>(d)] = 1;
  }

  void var() {
    const ValueId m = reduce(OpId::Mean, x_, 0, true);
    const ValueId d = node(OpId::Sub, Attrs{}, {x_, m}, xm_.sizes);
    const ValueId q = node(OpId::Mul, Attrs{}, {d, d}, xm_.sizes);
    // var's keepdim; its unbiased flag is the correction. The var's value: its readers and
    // outputs stay as they are.
    reduce(OpId::Mean, q, n_.attrs.ints[1] != 0 ? 1 : 0, n_.attrs.ints[0] != 0, n_.output);
  }

  // softmax_cols (ops/cpu/reduce_kernels.cpp): the column maxima m (no shift of infinities:
  // eager's NaN for a column of -inf or with a +inf is the chain's too), the sums of exp(x - m)
  // in the column order, r = 1 / s, and e * r per element; log_softmax: x - (m + log(s)).
  void softmax(bool log) {
    const ValueId m = reduce(OpId::Amax, x_, 1, true);
    const ValueId d = node(OpId::Sub, Attrs{}, {x_, m}, xm_.sizes);
    const ValueId e = node(OpId::Exp, Attrs{}, {d}, xm_.sizes);
    const ValueId s = reduce(OpId::Sum, e, 0, true);
    if (log) {
      const ValueId lse =
          node(OpId::Add, Attrs{}, {m, node(OpId::Log, Attrs{}, {s}, kept_)}, kept_);
      node(OpId::Sub, Attrs{}, {x_, lse}, xm_.sizes, n_.output);
      return;
    }
    const ValueId r = node(OpId::Reciprocal, Attrs{}, {s}, kept_);
    node(OpId::Mul, Attrs{}, {e, r}, xm_.sizes, n_.output);
  }

  void logsumexp() {
    const ValueId m = reduce(OpId::Amax, x_, 1, true);  // -inf over no rows
    // The shift: m, with the infinities clamped to the largest finite values (below).
    Attrs finite;
    const bool f32 = n_.meta.dtype == DType::Float32;
    finite.scalars = {Scalar(f32 ? double(std::numeric_limits<float>::lowest())
                                 : std::numeric_limits<double>::lowest()),
                      Scalar(f32 ? double(std::numeric_limits<float>::max())
                                 : std::numeric_limits<double>::max())};
    const ValueId s = node(OpId::Clamp, finite, {m}, kept_);
    const ValueId d = node(OpId::Sub, Attrs{}, {x_, s}, xm_.sizes);
    const ValueId e = node(OpId::Exp, Attrs{}, {d}, xm_.sizes);
    const ValueId l = node(OpId::Log, Attrs{}, {reduce(OpId::Sum, e, 0, true)}, kept_);
    if (n_.attrs.ints[0] != 0) {  // keepdim
      node(OpId::Add, Attrs{}, {l, s}, kept_, n_.output);
      return;
    }
    // The reduced dims squeezed, from the last (a view with the recorded shape would not be
    // size-generic).
    ValueId r = node(OpId::Add, Attrs{}, {l, s}, kept_);
    ValueMeta rm = meta(kept_);
    for (int64_t d = last_reduced_; d > last_reduced_ - reduced_; --d) {
      Attrs squeeze;
      squeeze.ints = {d, 0};
      rm = view_meta(OpId::Squeeze, squeeze, rm);
      r = out_.add(OpId::Squeeze, squeeze, {r}, rm,
                   d == last_reduced_ - reduced_ + 1 ? n_.output : -1);
    }
  }

 private:
  ValueMeta meta(DimVector sizes) const {  // of the split node's dtype and device
    return fresh_meta(std::move(sizes), n_.meta.dtype, n_.meta.device);
  }
  // A node of the split node's dtype.
  ValueId node(OpId op, const Attrs& attrs, SmallVector<ValueId, 4> inputs, DimVector sizes,
               ValueId output = -1) {
    return out_.add(op, attrs, std::move(inputs), meta(std::move(sizes)), output);
  }
  // A reduction over the column dims with this keepdim and attrs.ints[1].
  ValueId reduce(OpId op, ValueId in, int64_t ints1, bool keepdim, ValueId output = -1) {
    Attrs a = softmax_like(n_.op) ? softmax_dim_attrs(n_, xm_.sizes.size()) : n_.attrs;  // dims
    a.ints[0] = keepdim ? 1 : 0;
    a.ints[1] = ints1;
    return node(op, a, {in}, keepdim ? kept_ : n_.meta.sizes, output);
  }

  NodeListBuilder& out_;
  const Node& n_;
  const ValueId x_;
  const ValueMeta& xm_;
  DimVector kept_;                        // keepdim's shape: the reduced dims as 1
  const int64_t last_reduced_, reduced_;  // the last reduced dim, and how many
};

}  // namespace

int split_column_reductions(PassGraph& pg, const KernelTarget& target) {
  const tracer::Graph& g = pg.graph;
  const std::vector<const ValueMeta*> meta = pg.metas();
  NodeListBuilder out(pg);
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    const ColumnDims c =
        n.inputs.size() == 1 ? splittable(n, *meta[n.inputs[0]], target) : ColumnDims{};
    if (c.reduced == 0) {
      out.keep(j);
      continue;
    }
    Split split(out, n, n.inputs[0], *meta[n.inputs[0]], c);
    if (n.op == OpId::Var)
      split.var();
    else if (n.op == OpId::Logsumexp)
      split.logsumexp();
    else
      split.softmax(n.op == OpId::LogSoftmax);
    ++count;
  }
  if (count > 0) out.commit();
  return count;
}

}  // namespace kiln::jit::passes
