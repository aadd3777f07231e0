// Sub-plans of higher-order nodes: the body of a region or compile call, a scan or map step, a
// while_loop's cond and body, a cond's branches are each planned like a region of their own (the
// planner's fused kernels, BLAS steps and eager steps), so a model written as `kiln::region`
// layers, or a loop written with `scan`, runs fused kernels inside its bodies instead of
// interpreting them op by op. The control flow around the bodies stays the interpreter's
// (tracer/hop_interpreter.h): which branch, how many steps, how results stack.
//
// Contract:
// - A body's plan gives what interpreting it gives (its kernels give the eager bits, like any
//   plan's); a body the planner would leave interpreted (nothing to fuse), or one that draws
//   random numbers, has no plan and is interpreted.
// - Bodies are planned once per distinct body: the copies a region records at every call (48
//   layers, one body) share one plan, found by the body's exact structural key, so planning a
//   region of N calls costs one body's planning.
// - Planning a body may fail (the planner throws): that body is interpreted, with the one
//   planning warning the region would give.
#pragma once
#include <memory>
#include <vector>

#include "tracer/backend.h"
#include "tracer/graph.h"

namespace kiln::jit {

// Per node of `g`, per subgraph: its plan, or null where it is interpreted. Empty inner vectors
// for nodes without subgraphs.
using BodyPlans = std::vector<std::vector<std::shared_ptr<tracer::RegionPlan>>>;

// Plans the bodies of g's higher-order nodes through `planner` (the JIT's planner: nested bodies
// are planned by the same recursion). `any` is set when at least one body has a plan.
BodyPlans plan_bodies(const tracer::Graph& g, tracer::RegionPlanner& planner, bool* any);

}  // namespace kiln::jit
