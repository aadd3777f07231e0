// The JIT's planner (DESIGN.md, "JIT"): the one RegionPlanner the tracer sees. It splits a
// region into steps: pointwise chains fused into loop kernels for a kernel target (the CPU's
// asmjit target today), CPU matmuls BLAS steps with their epilogue kernel (blas_step.h),
// everything else an eager step (one node through its eager kernel), so one unsupported op
// never keeps the rest of a region interpreted. The bodies of higher-order nodes are planned the
// same way, as sub-plans (body_plans.h).
//
// Fusion: nodes join the kernel of a producer when they lower (jit/lower/lowering.h: any dtype,
// casts between them inside the kernel) and have the same output shape as it in the first
// recording (then in every
// recording: shapes follow from the inputs with the same size-1 dims), and every other input is
// ready before that kernel runs. A kernel stores only the values something outside it reads.
// A kernel the target fails to compile warns once and leaves its nodes eager steps.
#pragma once
#include <cstdint>
#include <memory>

#include "jit/plan/jit_plan.h"
#include "tracer/backend.h"

namespace kiln::jit {

// The plan of `g`, or null when it would fuse nothing (the region stays interpreted). The plan
// keeps `g`: pass a graph the caller no longer needs by rvalue (a 48-layer region's graph of 578
// inputs was copied here, every node and input meta into fresh pages).
std::unique_ptr<JitPlan> make_jit_plan(tracer::Graph g, const tracer::RuntimeScalars& runtime);

class Planner final : public tracer::RegionPlanner {
 public:
  const char* name() const override { return "jit"; }
  int threshold(const tracer::Graph& g) const override;
  std::unique_ptr<tracer::RegionPlan> plan(const tracer::Graph& g,
                                           const tracer::RuntimeScalars& runtime) override;
};

Planner& planner();

// Testing hook: a failed kernel compile warns once per process; after this the next one warns
// again (a test that counts the warning does not depend on which test failed a compile first).
void rearm_codegen_warning();
// How many fused kernels failed to compile while planning (each left its nodes eager), since the
// process started: tests of whole programs check that none did.
int64_t codegen_failures();

}  // namespace kiln::jit
