#include "jit/passes/decompose.h"

#include <unordered_map>

#include "jit/lower/lowering.h"
#include "ops/decomposition.h"
#include "runtime/dispatcher.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

// Collects the primitives of one composite, numbered from the graph's next free value.
class Emitter final : public DecompositionEmitter {
 public:
  Emitter(const ValueMeta& composite, int32_t next) : composite_(composite), next_(next) {}
  DecompValue emit(OpId op, const Attrs& attrs, std::span<const DecompValue> inputs,
                   DType dtype) override {
    Node n;
    n.op = op;
    n.attrs = attrs;
    for (DecompValue v : inputs) n.inputs.push_back(v);
    n.output = next_++;
    n.meta.sizes = composite_.sizes;
    n.meta.device = composite_.device;
    n.meta.dtype = dtype;
    nodes.push_back(std::move(n));
    return nodes.back().output;
  }
  int32_t next() const { return next_; }
  std::vector<Node> nodes;

 private:
  const ValueMeta& composite_;
  int32_t next_;
};

bool lowers_any_way(const Node& n, std::span<const ValueMeta* const> in,
                    const KernelTarget& target) {
  // The typed lowering covers comparisons and masks too (a mask is a Bool value).
  return lowers(n, in, ScalarSource{}, target);
}

}  // namespace

int decompose(PassGraph& pg, const KernelTarget& target, bool force) {
  const tracer::Graph& g = pg.graph;
  const std::vector<const ValueMeta*> meta = pg.metas();
  NodeListBuilder out(pg);
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    auto keep = [&] { out.keep(j); };
    const DecompositionFn fn = decomposition(n.op);
    const uint32_t flags = op_def(n.op).flags;
    if (fn == nullptr || pg.has_runtime_scalar(j) || !n.subgraphs.empty() ||
        (flags & (kIsRandom | kIsView | kHigherOrder)) || !n.meta.strides.empty()) {
      keep();
      continue;
    }
    SmallVector<const ValueMeta*, 4> in_meta;
    SmallVector<DType, 4> in_dtype;
    for (ValueId v : n.inputs) {
      in_meta.push_back(meta[v]);
      in_dtype.push_back(meta[v]->dtype);
    }
    if (!force && lowers(n, {in_meta.data(), in_meta.size()}, ScalarSource{}, target)) {
      keep();
      continue;
    }
    Emitter e(n.meta, out.next());
    const DecompositionCall call{n.op,
                                 n.attrs,
                                 {n.inputs.data(), n.inputs.size()},
                                 {in_dtype.data(), in_dtype.size()},
                                 n.meta.dtype};
    const DecompValue r = fn(e, call);
    if (r == kNoDecomposition || e.nodes.empty() || r != e.nodes.back().output ||
        e.nodes.back().meta.dtype != n.meta.dtype) {
      keep();
      continue;
    }
    bool ok = true;
    if (!force) {
      std::unordered_map<ValueId, const ValueMeta*> emitted;
      for (const Node& m : e.nodes) {
        SmallVector<const ValueMeta*, 4> m_in;
        for (ValueId v : m.inputs) m_in.push_back(v < g.num_values() ? meta[v] : emitted.at(v));
        ok = ok && lowers_any_way(m, {m_in.data(), m_in.size()}, target);
        emitted[m.output] = &m.meta;
      }
    }
    if (!ok) {
      keep();
      continue;
    }
    e.nodes.back().output = n.output;  // the composite's readers and outputs stay as they are
    for (Node& m : e.nodes) out.add(std::move(m));
    out.next() = e.next();
    ++count;
  }
  out.commit();
  return count;
}

}  // namespace kiln::jit::passes
