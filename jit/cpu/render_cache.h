// Rendering through the process-wide kernel cache: each variant of a loop kernel is rendered
// once per process (render.h render_cpu_kernel) into the JitRuntime that owns every kernel's
// code, keyed by the kernel's canonical encoding and everything the variant and
// KILN_JIT_ASSEMBLER change (a hit compares the whole key). Each render is timed and counted
// (cpu_target.h: CpuJitCounters, cpu_jit_compile_times), traced (KILN_PROFILE), logged with its
// minor page faults (KILN_LOG=jit=debug), dumped (KILN_DUMP=asm), and may take an injected
// codegen fault (inject_cpu_codegen_faults). A miss looks in the disk cache first
// (disk_cache.h: a kernel a process rendered before, loaded instead of rendered; counted as
// CpuJitCounters::disk_loads, not as a render) and stores what it renders there. Thread-safe.
#pragma once
#include "jit/cpu/render.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

KernelFn render_cached(const LoopKernel& k, const KernelVariant& v);

// The process's rendering of `k` as `v` when it has one (never renders, nor looks on disk).
KernelFn cached_rendering(const LoopKernel& k, const KernelVariant& v);

}  // namespace kiln::jit
