// The CPU kernel disk cache: rendered kernels' machine code kept across processes in the cache
// root's cpu/<build id>/ folder (jit/loop/disk_cache.h: the files, their format and failure modes),
// so that a program's second run loads its kernels instead of rendering them. render_cached
// (render_cache.h) looks here after a miss in the process's kernel cache and stores what it
// renders. KILN_JIT_DISK_CACHE=0 turns it off; KILN_CACHE_DIR moves it.
//
// Key material: the render key (the loop kernel's canonical encoding, the variant, the render
// path: render_cache.cpp) and the GNU build id of the binary that holds kiln's renderer, so that
// any rebuild (the renderer, the vector math, asmjit) misses every older entry. A binary without
// a build id gets no disk cache (nothing else identifies the code that rendered an entry).
//
// What is stored: the fast path's code (RenderedKernel::relocatable). It reaches its constant
// pool through rip-relative addresses and jumps within itself, so its bytes run at any address
// the JitRuntime gives them (64-byte aligned, as the pool's aligned loads need: the render had
// the same), but for its calls out (sin and cos's huge-argument reduction, SSE2's Float64 FMA
// lanes): each holds its callee's absolute address, which moves between processes. The entry
// names each such place and callee (call_targets.h), and a load writes this process's address
// there. Payload, host byte order: u32 count, count x {u32 offset, u32 callee index}, the code.
// The Compiler path's code (asmjit's own calls) is rendered in every process, as before.
#pragma once
#include <asmjit/x86.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/cpu/render.h"
#include "jit/loop/disk_cache.h"

namespace kiln::jit {

// The GNU build id (hex) of the binary holding this code ("" when it has none).
const std::string& renderer_build_id();

// The key material of a rendering (`render_key`: render_cache.cpp's words) under `build_id`.
std::string cpu_kernel_material(std::span<const uint64_t> render_key, const std::string& build_id);

// The builds of kiln whose entries a cache folder keeps beside the running build's: entries go
// to <root>/cpu/<build id>/, whose folder a process marks as used when it opens the cache; the
// folders of all but the kKeptOtherBuilds most recently used other builds are removed then, in
// the background (every rebuild of a program linking kiln is a new build: without this the
// folder would grow by a program's kernels at every rebuild).
inline constexpr int kKeptOtherBuilds = 3;
// Removes the build folders under `builds` (<root>/cpu) but this build's and the `others` most
// recently used; returns how many it removed.
int prune_cpu_kernel_builds(const std::string& builds, int others);

// The process's cache: nullptr when off (KILN_JIT_DISK_CACHE=0, no build id, no cache root).
// The folder is the cache root's at first use, or the last set_cpu_kernel_disk_root's.
// A render holds it while it reads or writes (set_cpu_kernel_disk_root may replace it meanwhile).
std::shared_ptr<DiskCache> cpu_kernel_disk_cache();
// Points the process's cache at root/cpu, for tests and kiln-perf ("": back to the cache root
// at next use).
void set_cpu_kernel_disk_root(const std::string& root);

// The payload of rendering `r` (its code at r.fn), or nothing when it cannot be stored (not
// relocatable, a callee outside call_targets.h).
std::optional<std::vector<char>> cpu_kernel_payload(const RenderedKernel& r);
// Adds a payload's code to `rt`, this process's callee addresses written in: the function, or
// nullptr for a payload that holds no well-formed kernel or that asmjit could not add (the
// caller renders it instead).
KernelFn load_cpu_kernel(asmjit::JitRuntime& rt, std::span<const char> payload);

}  // namespace kiln::jit
