// The CPU kernel target: loop kernels rendered by asmjit (render.h) for the active ISA, launched
// over any rank, size and strides. A launch coalesces dims, classifies each operand's innermost
// stride (contiguous, broadcast, strided), takes the machine code for that layout from the
// kernel cache (rendering it on first sight: microseconds), and splits the rows (or, for few
// rows, the inner range) across oneTBB within KILN_NUM_THREADS; small launches run inline.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "jit/target.h"

namespace kiln::jit {

struct CpuJitCounters {
  std::atomic<int64_t> kernels{0};     // functions rendered (cache misses)
  std::atomic<int64_t> compile_ns{0};  // total time rendering them
  std::atomic<int64_t> max_compile_ns{0};
  std::atomic<int64_t> assembled{0};            // of `kernels`, rendered by the fast path
  std::atomic<int64_t> assembler_fallbacks{0};  // fast-path renders given up (render.h)
  // Kernels loaded from the disk cache instead of rendered (disk_cache.h; each load's time is
  // in KILN_PROFILE's trace and KILN_LOG=jit=debug).
  std::atomic<int64_t> disk_loads{0};
  // Kernels made as a streaming rendering's ordinary-stores twin (render.h render_cpu_kernel):
  // not counted in `kernels`; their encoding's time is in the streaming rendering's.
  std::atomic<int64_t> twins{0};
  // Baseline tier (baseline_kernel.h): kernels given baseline code, launches that ran it, and
  // kernels whose background render failed (they keep running it).
  std::atomic<int64_t> baseline_kernels{0};
  std::atomic<int64_t> baseline_launches{0};
  std::atomic<int64_t> baseline_kept{0};
  // Of the baseline launches, progressive ones: too large for baseline code to pay, they ran it
  // only until the rendering landed (CpuKernel::baseline_until_rendered).
  std::atomic<int64_t> progressive_launches{0};
  std::atomic<int64_t> launches{0};
  std::atomic<int64_t> column_launches{0};  // of those, column kernels (render_cols.h)
  // Of those, row kernels whose long rows were split across threads by chunks
  // (cpu_kernel_reduce.cpp run_row_chunks).
  std::atomic<int64_t> split_row_launches{0};
  // Of those, launches whose element outputs were stored by chunks too (elements_by_chunks).
  std::atomic<int64_t> split_element_launches{0};
  // Of the column launches, those whose rows were split across threads by chunks
  // (cpu_kernel_reduce.cpp launch_cols).
  std::atomic<int64_t> split_column_launches{0};
  // Of those, launches with non-temporal stores (store_choice.h).
  std::atomic<int64_t> streaming_launches{0};
};
CpuJitCounters& cpu_jit_counters();

// Each rendering's time in ns, in the order they finished (thread-safe; one entry per kernel
// counted in CpuJitCounters::kernels): the entries from index `first` on, so that a caller can
// take the renderings of a stretch of time (cpu_jit_compile_count() before, this after).
std::vector<int64_t> cpu_jit_compile_times(size_t first = 0);
size_t cpu_jit_compile_count();

// Forgets the process's rendered kernels (tests, kiln-perf): the next launch of each looks in
// the disk cache, then renders. Plans keep the code they hold; no code is freed.
void forget_cpu_kernels();

// Testing hook: while non-zero, the next that many renders throw (an injected codegen fault).
void inject_cpu_codegen_faults(int count);

// Testing hook: called on the launching thread after each block of baseline code that a
// progressive launch runs (CpuKernel::baseline_until_rendered: a test lets the rendering land
// there, mid-launch); empty for none.
void set_progressive_block_hook(std::function<void()> hook);

// What the planner knows of a kernel's launches: the elements of its index space (0: unknown)
// and whether it runs as a column kernel (LaunchArgs::inner_dims > 0).
struct CpuLaunchHint {
  int64_t elements = 0;
  bool columns = false;
};

class CpuTarget final : public KernelTarget {
 public:
  const char* name() const override;
  int threshold() const override { return 0; }  // asmjit compiles in microseconds
  bool supports(ExprOp op, DType dtype) const override;
  std::shared_ptr<CompiledKernel> compile(const LoopKernel& k) override;
  bool launches_column_reduction(const DimVector& sizes, int reduced_dims,
                                 int inner_dims) const override;
  // The same, with what the planner knows of the kernel's launches (CpuLaunchHint). Compiling
  // renders one variant at once, so that a codegen failure surfaces while planning: the
  // all-contiguous one, as a column kernel where the launches will be, with non-temporal stores
  // where every element output will be large enough for them (as the launches decide:
  // kStreamingBytes), so that no rendering is made that no launch uses.
  std::shared_ptr<CompiledKernel> compile(const LoopKernel& k, const CpuLaunchHint& hint);
};

CpuTarget& cpu_target();

}  // namespace kiln::jit
