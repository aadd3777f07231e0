#include "jit/passes/sink_views.h"

#include <algorithm>

#include "jit/lower/lowering.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

bool sinkable_view(OpId op) {
  return op == OpId::Permute || op == OpId::Slice || op == OpId::Select || op == OpId::Squeeze ||
         op == OpId::Unsqueeze;
}

// Appends views of input `u` (metadata `um`) that give it the view V's index map over P's
// shape `p`, and returns the value that P' reads instead of `u`.
class ViewBuilder {
 public:
  explicit ViewBuilder(NodeListBuilder& out) : out_(out) {}

  ValueId add(OpId op, const Attrs& attrs, ValueId u, ValueMeta& um) {
    um = view_meta(op, attrs, um);
    return out_.add(op, attrs, {u}, um);
  }

  ValueId apply(const Node& v, const DimVector& p, ValueId u, ValueMeta um) {
    const int64_t rank = static_cast<int64_t>(p.size());
    while (static_cast<int64_t>(um.sizes.size()) < rank) {
      Attrs a;
      a.ints = {0};
      u = add(OpId::Unsqueeze, a, u, um);
    }
    // A dim where u broadcasts against P: u has one element along it.
    auto broadcasts = [&](int64_t d) { return um.sizes[d] == 1 && p[d] != 1; };
    auto wrap = [&](int64_t d) { return d < 0 ? d + rank : d; };
    switch (v.op) {
      case OpId::Permute:
      case OpId::Unsqueeze:
        return add(v.op, v.attrs, u, um);
      case OpId::Slice:
        return broadcasts(wrap(v.attrs.ints[0])) ? u : add(v.op, v.attrs, u, um);
      case OpId::Select: {
        const int64_t d = wrap(v.attrs.ints[0]);
        if (!broadcasts(d)) return add(v.op, v.attrs, u, um);
        Attrs a = v.attrs;
        a.ints[1] = 0;  // a broadcast dim's one element
        return add(v.op, a, u, um);
      }
      case OpId::Squeeze: {  // the dims of size 1 in P (and so in u), from the last
        const bool every = v.attrs.ints[1] != 0;
        for (int64_t d = rank - 1; d >= 0; --d) {
          if (p[d] != 1 || !(every || d == wrap(v.attrs.ints[0]))) continue;
          Attrs a;
          a.ints = {d, 0};
          u = add(OpId::Squeeze, a, u, um);
        }
        return u;
      }
      default:
        KILN_CHECK(false, "sink_views: {} is not a view it sinks", op_name(v.op));
    }
    return u;
  }

 private:
  NodeListBuilder& out_;
};

}  // namespace

int sink_views(PassGraph& pg, const KernelTarget& target) {
  tracer::Graph& g = pg.graph;
  const size_t nv = static_cast<size_t>(g.num_values());
  const std::vector<const ValueMeta*> meta = pg.metas();
  const std::vector<int32_t> producer = pg.producers();
  const std::vector<uint8_t> is_output = pg.output_flags();
  std::vector<int32_t> reads(nv, 0);
  std::vector<uint8_t> layout_reader(nv, 0);  // read by a node that sees the layout
  for (const Node& n : g.nodes) {
    const uint32_t f = op_def(n.op).flags;
    const bool elementwise = (f & kWritesAnyLayout) && !(f & (kIsView | kHigherOrder));
    for (ValueId v : n.inputs) {
      ++reads[v];
      if (!elementwise) layout_reader[v] = 1;
    }
  }

  auto sinks_through = [&](size_t j) -> const Node* {
    const Node& v = g.nodes[j];
    if (!sinkable_view(v.op) || is_output[v.output] || layout_reader[v.output]) return nullptr;
    const ValueId pv = v.inputs[0];
    const int32_t pj = producer[pv];
    if (pj < 0 || is_output[pv] || reads[pv] != 1) return nullptr;
    const Node& p = g.nodes[static_cast<size_t>(pj)];
    const uint32_t f = op_def(p.op).flags;
    if (!(f & kWritesAnyLayout) || (f & (kIsView | kIsRandom | kChecksData | kHigherOrder)) ||
        !p.subgraphs.empty() || !p.meta.strides.empty() ||
        pg.has_runtime_scalar(static_cast<size_t>(pj)))
      return nullptr;
    SmallVector<const ValueMeta*, 4> in;
    for (ValueId u : p.inputs) {
      if (meta[u]->sizes.size() > p.meta.sizes.size()) return nullptr;
      in.push_back(meta[u]);
    }
    return lowers(p, {in.data(), in.size()}, ScalarSource{}, target) ? &p : nullptr;
  };

  NodeListBuilder out(pg);
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node* p = sinks_through(j);
    if (p == nullptr) {
      out.keep(j);
      continue;
    }
    const Node& v = g.nodes[j];
    // P over the views of its inputs, defining V's value (V's readers stay as they are).
    ViewBuilder b(out);
    SmallVector<ValueId, 4> inputs;
    for (ValueId u : p->inputs) inputs.push_back(b.apply(v, p->meta.sizes, u, *meta[u]));
    ValueMeta qm;
    qm.sizes = v.meta.sizes;
    qm.dtype = p->meta.dtype;
    qm.device = p->meta.device;
    out.add(p->op, p->attrs, std::move(inputs), std::move(qm), v.output);
    ++count;
  }
  out.commit();
  return count;
}

int hoist_views(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  const std::vector<int32_t> producer = pg.producers();
  const size_t n = g.nodes.size();
  std::vector<std::vector<int32_t>> after(n);  // per node: the views to place right after it
  std::vector<int32_t> front;                  // views of graph inputs
  std::vector<uint8_t> attached(n, 0);
  for (size_t j = 0; j < n; ++j) {
    const Node& v = g.nodes[j];
    if (!(op_def(v.op).flags & kIsView) || !v.subgraphs.empty() || v.inputs.empty()) continue;
    const int32_t p = producer[v.inputs[0]];
    (p < 0 ? front : after[static_cast<size_t>(p)]).push_back(static_cast<int32_t>(j));
    attached[j] = 1;
  }
  // The new order first, as indices: when it is the graph's own (no view to move: most
  // graphs), the nodes stay where they are (moving a 1000-node list into a new one, faulted in
  // anew, was a fifth of planning a 1000-add region).
  std::vector<int32_t> order;
  order.reserve(n);
  std::vector<int32_t> stack;
  int moved = 0;
  auto emit = [&](int32_t j) {  // j, then the views of j, of those views, ... (depth first)
    stack.push_back(j);
    while (!stack.empty()) {
      const auto k = static_cast<size_t>(stack.back());
      stack.pop_back();
      moved += k != order.size();
      order.push_back(static_cast<int32_t>(k));
      for (auto it = after[k].rbegin(); it != after[k].rend(); ++it) stack.push_back(*it);
    }
  };
  for (int32_t j : front) emit(j);
  for (size_t j = 0; j < n; ++j)
    if (!attached[j]) emit(static_cast<int32_t>(j));
  if (moved == 0 && order.size() == n) return 0;
  std::vector<Node> out;
  std::vector<int32_t> origin;
  out.reserve(n);
  origin.reserve(n);
  for (int32_t k : order) {
    out.push_back(std::move(g.nodes[static_cast<size_t>(k)]));
    origin.push_back(pg.origin[static_cast<size_t>(k)]);
  }
  g.nodes = std::move(out);
  pg.origin = std::move(origin);
  return moved;
}

}  // namespace kiln::jit::passes
