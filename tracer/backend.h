// The hand-off to the JIT (DESIGN.md, "JIT"): a RegionPlanner turns a region's canonical graph
// into a runnable RegionPlan. The recorder and the region cache only know this interface; the
// JIT's planner (jit/plan/) registers itself in kiln::init() and owns the kernel targets (asmjit,
// later NVRTC) behind it.
//
// Words: a region is *planned* (this file), a plan's kernels are *compiled* by a kernel target
// (jit/), and kiln::compile is the public higher-order op (tracer/hop/compile.*).
//
// Contract:
// - Plans are size-generic. plan() sees the first recording of a region; the plan then runs every
//   later recording of it, whose inputs may have other sizes (same ranks and size-1 dims), other
//   strides of the same contiguity class, and other storage offsets (the region key, graph_hash
//   HashMode::Shapeless, guards nothing else). Everything a plan needs at run time comes in
//   RunArgs: it never reads the current graph (JIT passes rewrite graphs freely).
// - plan() may run on a background thread (KILN_JIT_ASYNC=1, the default), concurrently with
//   recording and interpretation on other threads; it must not dispatch ops into the caller's
//   segment (the planning thread runs eagerly).
// - run() returns what interpret() returns: the outputs in order, and where an op fails (an index
//   out of range found by a kernel) the first error, with every output computed from the failed
//   value undefined and every other output still computed.
// - Destinations: where RunArgs::destinations names memory for an output (a written-back input),
//   the plan writes the output there directly when no later read sees the old contents, exactly
//   as the interpreter does (an optimizer step never goes through a temporary and a copy); the
//   returned output is then that destination. Anywhere else the caller copies.
// - Outputs are fresh tensors (row-major unless the output is a view of an input: then the view).
// - Throwing from plan() is a planning failure: the region warns once and stays interpreted.
//   Returning null means "nothing worth compiling": the region stays interpreted, silently.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "runtime/scalar.h"
#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::tracer {

// A scalar of the graph that is a runtime input of the plan: node index and Attrs::scalars index.
struct ScalarPosition {
  int32_t node;
  int32_t index;
  friend bool operator==(const ScalarPosition&, const ScalarPosition&) = default;
};
using RuntimeScalars = std::vector<ScalarPosition>;

// The Philox words of one random node of the current recording (random_nodes() order).
struct PhiloxWords {
  uint64_t seed = 0;
  uint64_t counter = 0;
};

// The indices of the random nodes of `g` (kIsRandom ops), in node order: RunArgs::random holds
// their words in this order.
std::vector<int32_t> random_nodes(const Graph& g);

// What changes from one run of a region to the next, extracted by the runner (region_runner.cpp).
struct RunArgs {
  std::span<const Tensor> inputs;        // one per graph input, materialized
  std::span<const Tensor> destinations;  // empty, or one per graph output (undefined: none)
  std::span<const Scalar> scalars;       // the promoted scalars, in RuntimeScalars order
  std::span<const PhiloxWords> random;   // per random node, in random_nodes() order
};

// Outputs and the first error of one run (interpret() returns the same).
struct InterpretResult {
  std::vector<Tensor> outputs;
  std::exception_ptr error;
  bool planned = false;  // a compiled plan ran (run_cached_region sets it)
};

class RegionPlan {
 public:
  virtual ~RegionPlan() = default;
  virtual InterpretResult run(const RunArgs& args) = 0;
};

class RegionPlanner {
 public:
  virtual ~RegionPlanner() = default;
  virtual const char* name() const = 0;  // "jit": shown in stats and logs
  // How many interpreted runs a region of `g` gets before plan() is asked (0: before its first
  // run, which is then the plan's when planning is synchronous).
  // config().jit_threshold overrides it when KILN_JIT_THRESHOLD is set.
  virtual int threshold(const Graph& g) const = 0;
  virtual std::unique_ptr<RegionPlan> plan(const Graph& g, const RuntimeScalars& runtime) = 0;
};

// Installs the planner regions are planned with (nullptr: none, interpretation only). Not owned.
// Regions that already hold a plan keep it.
void set_planner(RegionPlanner* planner);
RegionPlanner* current_planner();

}  // namespace kiln::tracer
