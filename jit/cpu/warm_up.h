// The CPU renderer's warm-up. A process's first render of a kind of kernel costs about a
// millisecond where later ones cost 30-150 µs: nearly all of it minor page faults, the first
// touches of kiln's and asmjit's renderer code and tables, of the JitRuntime's first executable
// block and of the render workspaces (docs/jit.md "Compile time"). The warm-up renders a few
// representative kernels (sample_kernels.h: a tanh pointwise chain plain and streaming, one with
// a broadcast operand, softmax's and layer norm's row kernels, a column sum) on the background
// planning thread, off the program's critical path, so that its first kernels find those pages
// present.
//
// Started at most once per process: by kiln::init() when the JIT is on at start-up (KILN_JIT=1),
// or by a caller that is about to switch it on (kiln-perf). KILN_JIT_WARMUP=0 turns it off. Its
// renders are thrown away: not in the kernel cache, not counted in CpuJitCounters or the compile
// times, never consuming an injected codegen fault, never dumped; an error in them is ignored
// (the program's own renders report theirs). tracer::wait_for_compiles() waits for it.
#pragma once
#include <cstddef>

namespace kiln::jit {

// The recording room the warm-up leaves in the workspace it used (reserve_idle_render_workspace,
// render_workspace.h): 4096 instructions, about 1.4 MB; kernels of up to ~1500 ops.
inline constexpr size_t kWarmUpReservedInstructions = 4096;

// Queues the warm-up on the planning thread, once per process; a no-op under KILN_JIT_WARMUP=0
// or once started.
void start_cpu_renderer_warm_up();

// Whether start_cpu_renderer_warm_up() queued the warm-up in this process.
bool cpu_renderer_warm_up_started();

// Testing: runs the warm-up's renders now, on the calling thread, whether or not it ran before;
// returns how many of them succeeded (all of them, unless asmjit failed one).
int run_cpu_renderer_warm_up_now();

}  // namespace kiln::jit
