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

// The metadata the view op's own meta function gives for an input of metadata `in`.
ValueMeta view_meta(OpId op, const Attrs& attrs, const ValueMeta& in) {
  DimVector strides = in.strides.empty() ? contiguous_strides(in.sizes) : in.strides;
  const Tensor t(make_ref<TensorImpl>(in.sizes, std::move(strides), in.offset, in.dtype, in.device,
                                      Ref<Storage>{}));
  const Tensor args[] = {t};
  ValueMeta m;
  op_def(op).meta(OpCall{op, args, attrs}, m);
  return m;
}

// Appends views of input `u` (metadata `um`) that give it the view V's index map over P's
// shape `p`, and returns the value that P' reads instead of `u`.
class ViewBuilder {
 public:
  ViewBuilder(std::vector<Node>& out, std::vector<int32_t>& origin, int32_t& next)
      : out_(out), origin_(origin), next_(next) {}

  ValueId add(OpId op, const Attrs& attrs, ValueId u, ValueMeta& um) {
    Node n;
    n.op = op;
    n.attrs = attrs;
    n.inputs.push_back(u);
    n.output = next_++;
    n.meta = view_meta(op, attrs, um);
    um = n.meta;
    out_.push_back(std::move(n));
    origin_.push_back(-1);
    return out_.back().output;
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
  std::vector<Node>& out_;
  std::vector<int32_t>& origin_;
  int32_t& next_;
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

  std::vector<Node> out;
  std::vector<int32_t> out_origin;
  out.reserve(g.nodes.size());
  int32_t next = g.num_values();
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node* p = sinks_through(j);
    if (p == nullptr) {
      out.push_back(g.nodes[j]);
      out_origin.push_back(pg.origin[j]);
      continue;
    }
    const Node& v = g.nodes[j];
    Node q;  // P over the views of its inputs, defining V's value (V's readers stay as they are)
    q.op = p->op;
    q.attrs = p->attrs;
    ViewBuilder b(out, out_origin, next);
    for (ValueId u : p->inputs) q.inputs.push_back(b.apply(v, p->meta.sizes, u, *meta[u]));
    q.output = v.output;
    q.meta.sizes = v.meta.sizes;
    q.meta.dtype = p->meta.dtype;
    q.meta.device = p->meta.device;
    out.push_back(std::move(q));
    out_origin.push_back(-1);
    ++count;
  }
  g.nodes = std::move(out);
  pg.origin = std::move(out_origin);
  g.set_num_values(next);
  return count;
}

void hoist_views(PassGraph& pg) {
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
  std::vector<Node> out;
  std::vector<int32_t> origin;
  out.reserve(n);
  origin.reserve(n);
  std::vector<int32_t> stack;
  auto emit = [&](int32_t j) {  // j, then the views of j, of those views, ... (depth first)
    stack.push_back(j);
    while (!stack.empty()) {
      const auto k = static_cast<size_t>(stack.back());
      stack.pop_back();
      out.push_back(std::move(g.nodes[k]));
      origin.push_back(pg.origin[k]);
      for (auto it = after[k].rbegin(); it != after[k].rend(); ++it) stack.push_back(*it);
    }
  };
  for (int32_t j : front) emit(j);
  for (size_t j = 0; j < n; ++j)
    if (!attached[j]) emit(static_cast<int32_t>(j));
  g.nodes = std::move(out);
  pg.origin = std::move(origin);
}

}  // namespace kiln::jit::passes
