#include "jit/passes/gathered_rows.h"

#include <bit>
#include <vector>

#include "jit/lower/lower_reduce.h"
#include "ops/cpu/reduce_plan.h"
#include "ops/meta_helpers.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

bool over_dim_sets(OpId op) {
  switch (op) {
    case OpId::Sum:
    case OpId::Mean:
    case OpId::Prod:
    case OpId::Amax:
    case OpId::Amin:
    case OpId::Var:
    case OpId::Logsumexp:
      return true;
    default:
      return false;
  }
}

// The reduced dims of node n over x as a mask, if eager gathers them as rows (0 if not): see
// gathered_rows.h "Which dims count".
uint64_t gathered_mask(const Node& n, const ValueMeta& x) {
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (!over_dim_sets(n.op) || !n.subgraphs.empty() || n.meta.device != Device::cpu() ||
      x.device != Device::cpu() || !n.meta.strides.empty() || n.attrs.dims.empty() || rank < 2 ||
      rank >= 64 || !reduces_in_column_order(x))
    return 0;
  // The recorded node's dims were checked when it was recorded: no throw here.
  const uint64_t mask = dims_mask(op_name(n.op), n.attrs.dims, rank);
  return reduced_run(x.sizes, mask) == ReducedRun::Scattered ? mask : 0;
}

}  // namespace

int split_gathered_reductions(PassGraph& pg) {
  const tracer::Graph& g = pg.graph;
  const std::vector<const ValueMeta*> meta = pg.metas();
  NodeListBuilder out(pg);
  struct Gathered {
    ValueId x;
    uint64_t mask;
    ValueId copy;
  };
  std::vector<Gathered> copies;
  // A graph input (a leaf) reduced over a dim set by one node only stays that node: its copy
  // would be an eager step all the same, and eager's own gather (ordinary stores, read right
  // away) beat the copy op's non-temporal stores followed by a kernel reading memory
  // (`x.mean({0, 2, 3})` of a [32, 64, 56, 56] leaf on the 2-core VM: 1.6 ms eager, 1.9 split).
  // Two or more (batch norm's mean and var) share one copy and one row kernel: that wins.
  const std::vector<int32_t> producer = pg.producers();
  auto readers = [&](ValueId x, uint64_t mask) {
    int c = 0;
    for (const Node& m : g.nodes)
      c += m.inputs.size() == 1 && m.inputs[0] == x && gathered_mask(m, *meta[x]) == mask;
    return c;
  };
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    const uint64_t mask = n.inputs.size() == 1 ? gathered_mask(n, *meta[n.inputs[0]]) : 0;
    if (mask == 0 ||
        (producer[static_cast<size_t>(n.inputs[0])] < 0 && readers(n.inputs[0], mask) < 2)) {
      out.keep(j);
      continue;
    }
    const ValueMeta& xm = *meta[n.inputs[0]];
    const int64_t rank = static_cast<int64_t>(xm.sizes.size());
    Attrs perm;  // kept dims, then reduced dims, each in order
    for (int reduced = 0; reduced < 2; ++reduced)
      for (int64_t d = 0; d < rank; ++d)
        if (static_cast<int>((mask >> d) & 1u) == reduced) perm.dims.push_back(d);
    const int64_t k = std::popcount(mask);
    const ValueMeta pm = view_meta(OpId::Permute, perm, xm);
    const ValueMeta gm = fresh_meta(pm.sizes, xm.dtype, xm.device);
    Node row;  // the reduction over the gathered rows
    row.op = n.op;
    row.attrs = n.attrs;
    row.attrs.dims.clear();
    for (int64_t d = rank - k; d < rank; ++d) row.attrs.dims.push_back(d);
    row.attrs.ints[0] = 0;  // keepdim
    DimVector kept;
    for (int64_t d = 0; d < rank - k; ++d) kept.push_back(gm.sizes[d]);
    row.meta = fresh_meta(kept, n.meta.dtype, n.meta.device);
    if (row_reduction_dims(row, gm) != k) {  // no row kernel: eager's gather is as good
      out.keep(j);
      continue;
    }
    const bool keepdim = n.attrs.ints[0] != 0;
    // One copy per input and dim set (mean and var of x share it): a permute with one reader
    // sinks into x's producers (sink_views), so the copy kernel computes them.
    ValueId c = -1;
    for (const Gathered& done : copies)
      if (done.x == n.inputs[0] && done.mask == mask) c = done.copy;
    if (c < 0) {
      const ValueId p = out.add(OpId::Permute, perm, {n.inputs[0]}, pm);
      c = out.add(OpId::Copy, Attrs{}, {p}, gm);
      copies.push_back({n.inputs[0], mask, c});
    }
    ValueId r = out.add(row.op, row.attrs, {c}, row.meta, keepdim ? -1 : n.output);
    if (keepdim) {  // the reduced dims back as 1, from the first (size-generic, unlike a view)
      ValueMeta rm = row.meta;
      int64_t last = -1;
      for (int64_t d = 0; d < rank; ++d)
        if ((mask >> d) & 1u) last = d;
      for (int64_t d = 0; d < rank; ++d) {
        if (!((mask >> d) & 1u)) continue;
        Attrs unsqueeze;
        unsqueeze.ints[0] = d;
        rm = view_meta(OpId::Unsqueeze, unsqueeze, rm);
        r = out.add(OpId::Unsqueeze, unsqueeze, {r}, rm, d == last ? n.output : -1);
      }
    }
    ++count;
  }
  if (count > 0) out.commit();
  return count;
}

}  // namespace kiln::jit::passes
