// The steps after a leaf's gathered row kernel that run per block with it (gathered_step.h,
// "The tail"; docs/jit.md "The steps after the row kernel, per block too").
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "jit/plan/jit_plan.h"
#include "tracer/graph.h"

namespace kiln::jit {

// A kernel step of pointwise work (no reduction, no random draws).
bool pointwise_kernel(const Step& st);

// How many steps after step s + 1 (the row kernel of a leaf's gather at s) may join s's blocks:
// pointwise kernels (at most 4) and the view steps between them, ending with a kernel.
int gathered_tail_length(const tracer::Graph& g, const std::vector<Step>& steps, size_t s);

namespace detail {
inline std::atomic<int64_t> gathered_tail_runs{0};
}  // namespace detail

// For tests: how many runs of a blocked gather ran tail kernels in its blocks in this process.
inline int64_t gathered_tail_runs() { return detail::gathered_tail_runs.load(); }

// One joined kernel of a run: its launch over the whole, and how a block's launch differs.
struct JitPlan::GatheredTail {
  size_t step = 0;
  KernelStep* k = nullptr;
  KernelLaunch kl;
  size_t dim = 0;                      // the launch dim that is g's leading dim
  SmallVector<size_t, 2> from_buffer;  // operands reading the gathered leaf: the block's buffer
  DimVector buffer_strides;            // their strides there
};

}  // namespace kiln::jit
