// Recomputation of cheap element chains (docs/jit.md "Recomputation"): a planner helper
// (jit/plan/planner.cpp) over its groups and drafts.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "jit/plan/plan_group.h"
#include "runtime/dispatcher.h"
#include "tracer/graph.h"

namespace kiln::jit::planning {

// Ops whose vector math costs about as much per element as the memory pass a recomputation saves.
inline bool transcendental(OpId op) {
  switch (op) {
    case OpId::Exp:
    case OpId::Log:
    case OpId::Log1p:
    case OpId::Expm1:
    case OpId::Sin:
    case OpId::Cos:
    case OpId::Tanh:
    case OpId::Sigmoid:
    case OpId::Silu:
    case OpId::Erf:
    case OpId::Gelu:
    case OpId::GeluTanh:
    case OpId::Pow:
    case OpId::PowScalar:
      return true;
    default:
      return false;
  }
}

// Cheap element chains computed again where they are read instead of stored (docs/jit.md
// "Recomputation"). A value v that kernel A computes as an element value (no random draw: a
// pure function of what A loads and of A's row values, which A then stores) and that later
// kernels of A's index
// space read is stored by A and loaded by each of them: a write and a read of the whole index
// space apiece. When every reader outside A is such a kernel, each computes v itself from A's
// loads (at most kMaxChain nodes: a few vector operations per element against two memory
// passes; no transcendental function; at most one more whole-size load in each reader), and A
// no longer stores v (a graph output is not recomputed). The column
// splits need this (jit/passes/column_split.h): `(x * 2).var(0)` is two column kernels, both
// reading x. `loadable(grp, u)`: whether kernel grp may load value u (its layout suits the kernel).
// `producer[v]`: the node defining value v (-1: an input).
template <class Loadable>
void recompute_element_chains(const tracer::Graph& g,
                              const std::vector<const tracer::ValueMeta*>& meta,
                              const std::vector<int32_t>& producer, std::vector<Group>& groups,
                              const std::vector<Draft>& drafts, const std::vector<int32_t>& step_of,
                              const Loadable& loadable) {
  constexpr size_t kMaxChain = 8;
  const size_t nv = static_cast<size_t>(g.num_values());
  std::vector<uint8_t> is_output(nv, 0);
  for (ValueId v : g.outputs) is_output[v] = 1;
  // The steps reading each value outside the step computing it (one pass over the edges).
  std::vector<std::vector<int32_t>> outside_readers(nv);
  for (const tracer::Node& n : g.nodes)
    for (ValueId v : n.inputs) {
      std::vector<int32_t>& r = outside_readers[v];
      const int32_t s2 = step_of[n.output];
      if (s2 != step_of[v] && std::find(r.begin(), r.end(), s2) == r.end()) r.push_back(s2);
    }
  auto group_of = [&](int32_t s) -> Group* {
    return s >= 0 && drafts[s].group >= 0 ? &groups[drafts[s].group] : nullptr;
  };
  for (size_t jj = 0; jj < g.nodes.size(); ++jj) {
    const ValueId v = g.nodes[jj].output;
    const int32_t s1 = step_of[v];
    const Group* a = group_of(s1);
    const std::vector<int32_t>& readers = outside_readers[v];
    if (a == nullptr || is_output[v] || readers.empty() || meta[v]->sizes != a->sizes) continue;
    // v's chain in A: the nodes computing it from what A loads (in graph order).
    std::vector<int32_t> chain;
    std::vector<ValueId> leaves;
    bool ok = true;
    std::vector<ValueId> todo = {v};
    while (ok && !todo.empty()) {
      const ValueId u = todo.back();
      todo.pop_back();
      const int32_t j = producer[u];
      // Loaded by A: computed before it, or an input (a value A computes again itself is part of
      // the chain: no one may have stored it); or a row value of A (a reduction's result, one
      // per row or column: A stores it for the readers, a small tensor).
      if ((step_of[u] != s1 && !a->recomputes(u)) || j < 0 || (step_of[u] == s1 && a->is_row(u))) {
        if (std::find(leaves.begin(), leaves.end(), u) == leaves.end()) leaves.push_back(u);
        continue;
      }
      if (std::find(chain.begin(), chain.end(), j) != chain.end()) continue;
      const tracer::Node& n = g.nodes[static_cast<size_t>(j)];
      const uint32_t f = op_def(n.op).flags;
      ok = (f & kWritesAnyLayout) && !(f & (kIsView | kIsRandom | kHigherOrder)) &&
           !transcendental(n.op) && n.subgraphs.empty() && n.meta.strides.empty() &&
           n.meta.sizes == a->sizes && chain.size() < kMaxChain;
      chain.push_back(j);
      for (ValueId w : n.inputs) todo.push_back(w);
    }
    if (!ok) continue;
    std::sort(chain.begin(), chain.end());
    // Its readers outside A: later kernels of A's index space that may load every leaf.
    for (int32_t s2 : readers) {
      const Group* b = group_of(s2);
      // B loads the leaves instead of v: at most one more stream of the whole index space
      // (`a + b + c` from three inputs would read more than it saves).
      const auto new_streams = std::count_if(leaves.begin(), leaves.end(), [&](ValueId u) {
        return b != nullptr && meta[u]->sizes == a->sizes &&
               std::find(b->reads.begin(), b->reads.end(), u) == b->reads.end();
      });
      ok = ok && b != nullptr && s2 > s1 && b->sizes == a->sizes && new_streams <= 1 &&
           std::all_of(leaves.begin(), leaves.end(), [&](ValueId u) { return loadable(*b, u); });
    }
    if (!ok) continue;
    for (int32_t s2 : readers) {
      Group& b = groups[drafts[s2].group];
      std::vector<int32_t> added;
      for (int32_t j : chain) {
        const ValueId u = g.nodes[static_cast<size_t>(j)].output;
        if (b.recomputes(u)) continue;  // already there (an overlapping chain)
        added.push_back(j);
        b.recomputed.push_back(u);
      }
      // First, in graph order (a topological order): they read only the leaves, which B loads,
      // and each other. B's recomputed nodes are all at the front.
      b.nodes.insert(b.nodes.begin(), added.begin(), added.end());
      std::sort(b.nodes.begin(),
                b.nodes.begin() + static_cast<std::ptrdiff_t>(b.recomputed.size()));
      std::erase(b.reads, v);
      for (ValueId u : leaves)
        if (std::find(b.reads.begin(), b.reads.end(), u) == b.reads.end()) b.reads.push_back(u);
    }
  }
}

}  // namespace kiln::jit::planning
