#include "jit/passes/column_var.h"

#include <utility>
#include <vector>

#include "jit/lower/lower_reduce.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

// The column dims of var node n over x, if it is one the split applies to ({0, 0} if not).
ColumnDims splittable(const Node& n, const ValueMeta& x, const KernelTarget& target) {
  if (n.op != OpId::Var || n.inputs.size() != 1 || !n.subgraphs.empty() ||
      !n.meta.strides.empty() || n.meta.device != Device::cpu() || x.device != Device::cpu() ||
      !is_floating(x.dtype) || x.dtype != n.meta.dtype || !reduces_in_column_order(x))
    return {};
  Node as_mean;  // the reduction var's first pass is: a column reduction when var is one
  as_mean.op = OpId::Mean;
  as_mean.attrs = n.attrs;
  as_mean.meta = n.meta;
  const ColumnDims c = column_reduction_dims(as_mean, x);
  if (c.reduced == 0 || !target.launches_column_reduction(x.sizes, c.reduced, c.inner)) return {};
  return c;
}

}  // namespace

int split_column_var(PassGraph& pg, const KernelTarget& target) {
  tracer::Graph& g = pg.graph;
  const std::vector<const ValueMeta*> meta = pg.metas();
  std::vector<Node> out;
  std::vector<int32_t> out_origin;
  out.reserve(g.nodes.size());
  int32_t next = g.num_values();
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    const ColumnDims c =
        n.inputs.size() == 1 ? splittable(n, *meta[n.inputs[0]], target) : ColumnDims{};
    if (c.reduced == 0) {
      out.push_back(n);  // a copy: `meta` points into g.nodes
      out_origin.push_back(pg.origin[j]);
      continue;
    }
    const ValueId x = n.inputs[0];
    const ValueMeta& xm = *meta[x];
    auto node = [&](OpId op, Attrs attrs, SmallVector<ValueId, 4> inputs, DimVector sizes) {
      Node m;
      m.op = op;
      m.attrs = std::move(attrs);
      m.inputs = std::move(inputs);
      m.output = next++;
      m.meta.sizes = std::move(sizes);
      m.meta.dtype = n.meta.dtype;
      m.meta.device = n.meta.device;
      out.push_back(std::move(m));
      out_origin.push_back(-1);
      return out.back().output;
    };
    DimVector kept = xm.sizes;  // keepdim's shape: the reduced dims as 1
    const size_t r1 = kept.size() - static_cast<size_t>(c.inner);
    for (size_t d = r1 - static_cast<size_t>(c.reduced); d < r1; ++d) kept[d] = 1;
    Attrs first = n.attrs;
    first.ints[0] = 1;  // keepdim
    first.ints[1] = 0;
    const ValueId m = node(OpId::Mean, first, {x}, kept);
    const ValueId d = node(OpId::Sub, Attrs{}, {x, m}, xm.sizes);
    const ValueId q = node(OpId::Mul, Attrs{}, {d, d}, xm.sizes);
    Attrs second = n.attrs;  // var's keepdim; its unbiased flag is the correction
    second.ints[1] = n.attrs.ints[1] != 0 ? 1 : 0;
    node(OpId::Mean, second, {q}, n.meta.sizes);
    out.back().output = n.output;  // the var's readers and outputs stay as they are
    --next;
    ++count;
  }
  if (count == 0) return 0;
  g.nodes = std::move(out);
  pg.origin = std::move(out_origin);
  g.set_num_values(next);
  return count;
}

}  // namespace kiln::jit::passes
