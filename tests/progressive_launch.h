// Runs one launch of a new kernel with its rendering held back on the planning thread, as the
// progressive-launch tests do (CpuKernel::baseline_until_rendered): counts the blocks of
// baseline code it ran, and, where `lands`, lets the rendering land after the first block.
#pragma once
#include <cstdint>
#include <memory>

#include "jit/cpu/cpu_target.h"
#include "planning_thread_hold.h"
#include "tracer/region_runner.h"

namespace kiln::testing {

struct Progress {
  int64_t blocks = 0;       // blocks of baseline code the launch ran
  int64_t progressive = 0;  // progressive launches counted
  int64_t renders = 0;      // renders made meanwhile
};

// `compile()` gives the kernel (after the process's kernels are forgotten), `launch(kernel)`
// launches it.
template <class Compile, class Launch>
Progress progressive_launch(bool lands, Compile&& compile, Launch&& launch) {
  jit::forget_cpu_kernels();
  PlanningThreadHold hold;
  const std::shared_ptr<jit::CompiledKernel> kernel = compile();
  Progress p;
  const int64_t progressive = jit::cpu_jit_counters().progressive_launches.load();
  const int64_t renders = jit::cpu_jit_counters().kernels.load();
  jit::set_progressive_block_hook([&] {
    if (++p.blocks > 1 || !lands) return;
    hold.release();
    tracer::wait_for_compiles();  // the rendering lands after the first block
  });
  launch(*kernel);
  jit::set_progressive_block_hook({});
  p.progressive = jit::cpu_jit_counters().progressive_launches.load() - progressive;
  p.renders = jit::cpu_jit_counters().kernels.load() - renders;
  return p;
}

}  // namespace kiln::testing
