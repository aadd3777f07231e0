// KILN_JIT_VALIDATE (planner.h): a plan whose first runs (two) also run every node eagerly
// (JitPlan::run_reference), and a fused result that differs from eager's bytes raises a
// kiln::Error naming the kernel that made it (pointwise kernels are bitwise; any two NaNs of a
// floating dtype count as equal: the contract leaves a NaN's sign and payload open,
// docs/jit.md). Later runs are the plan's own.
#pragma once
#include <memory>

#include "jit/plan/jit_plan.h"
#include "tracer/backend.h"

namespace kiln::jit {

std::unique_ptr<tracer::RegionPlan> validating_plan(std::unique_ptr<JitPlan> plan);

}  // namespace kiln::jit
