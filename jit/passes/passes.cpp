#include "jit/passes/passes.h"

#include <atomic>

#include "jit/passes/broadcast_operands.h"
#include "jit/passes/column_split.h"
#include "jit/passes/cross_entropy_split.h"
#include "jit/passes/cse.h"
#include "jit/passes/dce.h"
#include "jit/passes/decompose.h"
#include "jit/passes/float_counts.h"
#include "jit/passes/gathered_rows.h"
#include "jit/passes/layer_norm_split.h"
#include "jit/passes/one_hot_compare.h"
#include "jit/passes/scatter_select.h"
#include "jit/passes/simplify.h"
#include "jit/passes/sink_views.h"
#include "runtime/error.h"
#include "runtime/logging.h"

namespace kiln::jit::passes {

namespace {

struct Totals {
  std::atomic<int64_t> decomposed{0}, sunk{0}, simplified{0}, merged{0}, folded{0}, dropped{0},
      hoisted{0};
};
Totals& totals() {
  static Totals t;
  return t;
}

// The rewritten graph's run arguments in terms of the original ones (arg_map.h).
std::shared_ptr<ArgMap> make_arg_map(const tracer::Graph& original,
                                     const tracer::RuntimeScalars& runtime, PassGraph& pg,
                                     tracer::RuntimeScalars& new_runtime) {
  auto map = std::make_shared<ArgMap>();
  map->original = original;
  map->original_runtime = runtime;
  map->constants = pg.constants;
  std::vector<std::vector<int32_t>> scalars_of(original.nodes.size());  // original node -> r
  for (size_t r = 0; r < runtime.size(); ++r)
    scalars_of[static_cast<size_t>(runtime[r].node)].push_back(static_cast<int32_t>(r));
  std::vector<int32_t> random_of(original.nodes.size(), -1);  // original node -> random index
  {
    const std::vector<int32_t> rn = tracer::random_nodes(original);
    for (size_t k = 0; k < rn.size(); ++k)
      random_of[static_cast<size_t>(rn[k])] = static_cast<int32_t>(k);
  }
  for (size_t j = 0; j < pg.graph.nodes.size(); ++j) {
    const int32_t o = pg.origin[j];
    if (o < 0) continue;
    for (int32_t r : scalars_of[static_cast<size_t>(o)]) {
      new_runtime.push_back({static_cast<int32_t>(j), runtime[static_cast<size_t>(r)].index});
      map->scalars.push_back(r);
    }
  }
  for (int32_t j : tracer::random_nodes(pg.graph)) {
    const int32_t o = pg.origin[static_cast<size_t>(j)];
    KILN_CHECK(o >= 0 && random_of[static_cast<size_t>(o)] >= 0,
               "jit passes: random node {} has no original random node", j);
    map->random.push_back(random_of[static_cast<size_t>(o)]);
  }
  return map;
}

}  // namespace

PassResult run_passes(const tracer::Graph& g, const tracer::RuntimeScalars& runtime,
                      const PassOptions& o) {
  PassGraph pg(g, runtime);
  PassCounts c;
  if (o.decompose && o.target != nullptr) {
    c.decomposed += decompose(pg, *o.target, o.decompose_all);
    c.decomposed += split_column_reductions(pg, *o.target);
    c.decomposed += split_gathered_reductions(pg);
    c.decomposed += split_layer_norms(pg);
    c.decomposed += split_cross_entropies(pg);
    c.decomposed += scatter_adds_to_selects(pg);
    c.decomposed += one_hots_to_compares(pg);
  }
  // Elementwise readers of an expand read its input and broadcast it themselves, and unary
  // nodes of an expand move under it, until neither applies (before the views sink: an
  // unsqueeze read by an expand is read by elementwise nodes now).
  for (int round = 0; o.simplify && round < 8; ++round) {
    const int e = lift_expands(pg) + broadcast_expands(pg);
    if (e == 0) break;
    c.simplified += e;
    c.dropped += dce(pg);
  }
  // Counts of masks that only float arithmetic reads become Float64 sums (row kernels read no
  // integer row value); after the expand rounds, which leave such arithmetic reading the count.
  if (o.simplify) c.simplified += float_counts(pg);
  // Each sweep leaves the sunk nodes dead, and new views of their inputs that may sink further.
  for (int sweep = 0; o.sink_views && o.target != nullptr && sweep < 16; ++sweep) {
    const int s = sink_views(pg, *o.target);
    if (s == 0) break;
    c.sunk += s;
    c.dropped += dce(pg);
  }
  // Full-size fills that only broadcast into elementwise readers shrink to one element (then
  // merge and fold).
  if (o.simplify) c.simplified += broadcast_fills(pg);
  // Simplification exposes equal nodes and merging exposes rules (max(x, x)): two rounds.
  // (dce() between rounds: a bypassed node left in place would match again.)
  for (int round = 0; round < 2; ++round) {
    const int before = c.simplified + c.merged;
    if (o.simplify) c.simplified += simplify(pg);
    if (o.cse) c.merged += cse(pg);
    c.dropped += dce(pg);
    if (c.simplified + c.merged == before) break;
  }
  if (o.fold) {
    const int f = fold_constants(pg, o.fold_limits);
    c.folded += f;
    if (f > 0) c.dropped += dce(pg);
  }
  // Views last of all move up (right after what they view; views of graph inputs before
  // everything), where views sank or not: a kernel reading a view made late would wait behind
  // it (autograd's gradient of a sum over long rows: an expand of a [1, 1] input recorded after
  // the forward, which kept the backward out of the forward's row kernel).
  if (o.sink_views) c.hoisted += hoist_views(pg);

  Totals& t = totals();
  t.decomposed += c.decomposed;
  t.sunk += c.sunk;
  t.simplified += c.simplified;
  t.merged += c.merged;
  t.folded += c.folded;
  t.dropped += c.dropped;
  t.hoisted += c.hoisted;

  PassResult r;
  r.counts = c;
  if (c.changes() == 0) {
    // pg.graph is g's copy as the passes left it: unchanged, or renumbered by dce with every
    // node and input in its place (the run arguments bind by position). Moved, not copied
    // again (a 1000-node graph's copy was a sixth of planning it).
    r.graph = std::move(pg.graph);
    r.runtime = runtime;
    return r;
  }
  r.args = make_arg_map(g, runtime, pg, r.runtime);
  r.graph = std::move(pg.graph);
  KILN_DEBUG(
      Jit,
      "graph passes: {} -> {} nodes ({} decomposed, {} views sunk, {} simplified, {} merged, "
      "{} folded, {} dropped, {} moved by hoisted views)",
      g.nodes.size(), r.graph.nodes.size(), c.decomposed, c.sunk, c.simplified, c.merged, c.folded,
      c.dropped, c.hoisted);
  return r;
}

PassCounts pass_totals() {
  const Totals& t = totals();
  PassCounts c;
  c.decomposed = static_cast<int>(t.decomposed.load());
  c.sunk = static_cast<int>(t.sunk.load());
  c.simplified = static_cast<int>(t.simplified.load());
  c.merged = static_cast<int>(t.merged.load());
  c.folded = static_cast<int>(t.folded.load());
  c.dropped = static_cast<int>(t.dropped.load());
  c.hoisted = static_cast<int>(t.hoisted.load());
  return c;
}

}  // namespace kiln::jit::passes
