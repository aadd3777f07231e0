#include "jit/passes/cse.h"

#include <bit>
#include <unordered_map>

#include "runtime/dispatcher.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;

bool same_node(const Node& a, const Node& b) {
  return a.op == b.op && a.inputs == b.inputs && same_bits(a.attrs, b.attrs) &&
         a.meta.sizes == b.meta.sizes && a.meta.dtype == b.meta.dtype &&
         a.meta.device == b.meta.device && a.meta.strides == b.meta.strides &&
         a.meta.offset == b.meta.offset;
}

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); }

uint64_t node_hash(const Node& n) {
  uint64_t h = mix(0xcbf29ce484222325ull, static_cast<uint64_t>(n.op));
  for (ValueId v : n.inputs) h = mix(h, static_cast<uint64_t>(v));
  for (int64_t i : n.attrs.ints) h = mix(h, static_cast<uint64_t>(i));
  for (int64_t d : n.attrs.dims) h = mix(h, static_cast<uint64_t>(d));
  for (const Scalar& s : n.attrs.scalars)
    h = mix(h, s.is_floating() ? std::bit_cast<uint64_t>(s.to_double())
                               : static_cast<uint64_t>(s.to_int()));
  for (int64_t d : n.meta.sizes) h = mix(h, static_cast<uint64_t>(d));
  return mix(h, static_cast<uint64_t>(n.meta.dtype));
}

}  // namespace

int cse(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  const size_t nv = static_cast<size_t>(g.num_values());
  const std::vector<uint8_t> is_output = pg.output_flags();
  std::vector<ValueId> repl(nv);
  for (size_t v = 0; v < nv; ++v) repl[v] = static_cast<ValueId>(v);
  std::unordered_multimap<uint64_t, int32_t> seen;  // hash -> node
  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    Node& n = g.nodes[j];
    for (ValueId& v : n.inputs)
      while (repl[v] != v) v = repl[v];
    const uint32_t flags = op_def(n.op).flags;
    if ((flags & (kIsRandom | kChecksData | kHigherOrder)) || !n.subgraphs.empty() ||
        pg.has_runtime_scalar(j))
      continue;
    const uint64_t h = node_hash(n);
    bool merged = false;
    if (!is_output[n.output]) {
      auto [b, e] = seen.equal_range(h);
      for (auto it = b; it != e; ++it) {
        const Node& first = g.nodes[static_cast<size_t>(it->second)];
        if (!same_node(first, n)) continue;
        repl[n.output] = first.output;
        merged = true;
        ++count;
        break;
      }
    }
    if (!merged) seen.emplace(h, static_cast<int32_t>(j));
  }
  return count;
}

}  // namespace kiln::jit::passes
