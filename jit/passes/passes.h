// The graph passes the JIT's planner runs on a copy of a region's canonical graph before it
// groups nodes into kernels (docs/jit.md, "Graph passes"), one file each:
//   decompose.h       composites into primitives, where that exposes fusion
//   column_split.h    var and logsumexp over columns as two column reductions each
//   float_counts.h    counts of masks read by float arithmetic become Float64 sums
//   sink_views.h      views of pointwise results become index maps of their inputs
//   simplify.h        bit-exact algebraic rules (x * 1, x - +0, neg(neg x), pow(x, 1), ...)
//   cse.h             common subexpression elimination
//   fold_constants.h  nodes computed from factories alone become constants of the plan
//   dce.h             dead-code elimination and dense renumbering
// They never change results beyond the numerical contract: every rewrite gives the bits the
// original graph's eager kernels give (NaN sign and payload aside). KILN_JIT_PASSES=0 turns them
// off (config().jit_passes).
//
// The rewritten graph keeps the original inputs in order (constants follow them) and the outputs
// in number and order; its promoted scalars and random nodes are those of the surviving nodes.
// The ArgMap maps each run's RunArgs (indexed by the original graph) onto it.
#pragma once
#include <memory>

#include "jit/passes/arg_map.h"
#include "jit/passes/fold_constants.h"
#include "jit/target.h"
#include "tracer/backend.h"
#include "tracer/graph.h"

namespace kiln::jit::passes {

struct PassOptions {
  const KernelTarget* target = nullptr;  // what lowers (decomposition); null: no decomposition
  bool decompose = true;
  bool decompose_all = false;  // every node with an entry, whether or not it already lowers
  bool sink_views = true;
  bool simplify = true;
  bool cse = true;
  bool fold = true;
  FoldLimits fold_limits;
};

struct PassCounts {
  int decomposed = 0;  // composite nodes replaced by their primitives
  int sunk = 0;        // views computed as the pointwise op over views of its inputs
  int simplified = 0;  // nodes rewritten or bypassed by an algebraic rule
  int merged = 0;      // nodes merged into an equal earlier node
  int folded = 0;      // nodes computed while planning
  int dropped = 0;     // dead nodes removed
  int hoisted = 0;     // nodes that changed place when views moved up (hoist_views)
  int changes() const {
    return decomposed + sunk + simplified + merged + folded + dropped + hoisted;
  }
};

struct PassResult {
  tracer::Graph graph;
  tracer::RuntimeScalars runtime;
  std::shared_ptr<const ArgMap> args;  // null: `graph` is the original, RunArgs apply as they are
  PassCounts counts;
};

PassResult run_passes(const tracer::Graph& g, const tracer::RuntimeScalars& runtime,
                      const PassOptions& options);

// The counts summed over every run_passes call of the process (tests, diagnostics).
PassCounts pass_totals();

}  // namespace kiln::jit::passes
