// Runs one flushed, canonical graph: looks its region up in the cache, runs the region's JIT plan
// when the planner made one (handing it the run arguments extracted from `g`: backend.h), else
// interprets it, and asks the planner for a plan once the region has run its threshold's worth of
// times (in the background when config().jit_async).
// Records the cache and interpretation events of the profiler, and dumps each new region's graph
// when KILN_DUMP is set.
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"
#include "tracer/interpreter.h"
#include "tracer/region_cache.h"

namespace kiln::tracer {

// Outputs and the first error, as interpret() returns them (a plan that throws fails every
// output).
// Looks `g` up in the region cache, then runs it (run_cached_region).
InterpretResult run_region(const Graph& g, std::span<const Tensor> inputs,
                           std::span<const int32_t> aliasing);

// Runs `g`, which the cache already matched to `found` (a null region: uncached, past the
// recompile limit): the region's plan when it has one, else the interpreter; counts the run and
// hands the region to the planner when it turns hot.
// `destinations`: see interpret().
InterpretResult run_cached_region(const CacheLookup& found, const Graph& g,
                                  std::span<const Tensor> inputs,
                                  std::span<const Tensor> destinations = {});

// Waits until no planning job is queued or running (tests, and before reporting stats). Where
// no planning thread can be started (out of threads), runs the queued jobs itself.
void wait_for_compiles();

// Tests: while `refuse`, a planning thread that is not running yet is not started, as when the
// process is out of threads (a forked child's first plan starts one).
void refuse_planning_thread_for_testing(bool refuse);

// Runs `job` on the planning thread after the jobs queued before it (the JIT's renderer warm-up:
// jit/cpu/warm_up.h); wait_for_compiles() waits for it too. At process exit a job not yet
// started never runs, and the exit waits for the one running. `job` must not throw.
void run_in_background(std::function<void()> job);

}  // namespace kiln::tracer
