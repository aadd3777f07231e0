#include "jit/cpu/warm_up.h"

#include <atomic>
#include <chrono>
#include <vector>

#include "jit/cpu/code_memory.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/op_kernels.h"
#include "jit/cpu/render.h"
#include "jit/cpu/render_cols.h"
#include "jit/cpu/render_workspace.h"
#include "jit/cpu/sample_kernels.h"
#include "runtime/config.h"
#include "runtime/logging.h"
#include "tracer/region_runner.h"

namespace kiln::jit {

namespace {

std::atomic<bool> g_started{false};

int warm_up() {
  prefault_cpu_code_memory();  // before the samples land in the block
  const JitIsa isa = active_jit_isa();
  // The baseline tier's op kernels first: a program's first kernels find them.
  if (config().jit_baseline != BaselineTier::Off) {
    const auto t0 = std::chrono::steady_clock::now();
    const int made = render_op_kernels(common_op_kernels(), isa);
    KILN_DEBUG(
        Jit, "cpu renderer warm-up: {} op kernels rendered in {} us ({} in all)", made,
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count(),
        op_kernel_count());
  }
  const double c = 0.044715;
  std::vector<std::pair<LoopKernel, KernelVariant>> renders;
  const LoopKernel gelu = sample_kernels::gelu(c);
  renders.emplace_back(gelu, cpu_target_variant(gelu, isa));
  renders.emplace_back(gelu, cpu_target_variant(gelu, isa));
  renders.back().second.streaming = true;
  const LoopKernel axpb = sample_kernels::axpb(c);
  renders.emplace_back(axpb, cpu_target_variant(axpb, isa));
  renders.back().second.layout[1] = InnerLayout::Broadcast;  // a bias
  for (const LoopKernel& k : {sample_kernels::softmax_row(c), sample_kernels::layernorm_row(c)})
    renders.emplace_back(k, cpu_target_variant(k, isa));
  const LoopKernel sum = sample_kernels::column_sum(c);
  if (column_kernel_ok(sum)) {
    renders.emplace_back(sum, cpu_target_variant(sum, isa));
    renders.back().second.columns = true;
  }
  int done = 0;
  for (const auto& [k, v] : renders) {
    try {
      render_and_discard_cpu_kernel(k, v);
      ++done;
    } catch (const std::exception& e) {  // the program's own renders report theirs
      KILN_DEBUG(Jit, "cpu renderer warm-up: a render failed ({}); stopping", e.what());
      break;
    }
  }
  // The workspace these renders used, made ready for kernels far larger than the samples.
  reserve_idle_render_workspace(kWarmUpReservedInstructions);
  return done;
}

}  // namespace

void start_cpu_renderer_warm_up() {
  if (!config().jit_warm_up || g_started.exchange(true)) return;
  tracer::run_in_background([] { warm_up(); });
}

bool cpu_renderer_warm_up_started() { return g_started.load(); }

int run_cpu_renderer_warm_up_now() { return warm_up(); }

}  // namespace kiln::jit
