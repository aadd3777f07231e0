// A fusion group's kernel (jit/plan/planner.cpp): the loop kernel of the group's nodes (its
// external inputs loaded, its nodes lowered in order, the values a later step or the graph's
// outputs read stored), compiled for the CPU target, with the step's run arguments.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "jit/plan/jit_plan.h"
#include "jit/plan/plan_group.h"
#include "tracer/backend.h"
#include "tracer/graph.h"

namespace kiln::jit::planning {

// The kernel of group `grp` as step `my_step`; null when it stores nothing. `last_reader[v]`:
// the last draft reading value v (-2: a graph output); `runtime`: the region's promoted scalars;
// `random_index[j]`: node j's index among the random nodes (-1: none).
std::unique_ptr<KernelStep> build_group_kernel(const tracer::Graph& g, const Group& grp,
                                               const std::vector<const tracer::ValueMeta*>& meta,
                                               const std::vector<int32_t>& last_reader,
                                               const std::vector<tracer::ScalarPosition>& runtime,
                                               const std::vector<int32_t>& random_index,
                                               int32_t my_step);

}  // namespace kiln::jit::planning
