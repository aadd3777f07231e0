// The CPU kernel disk cache: rendered kernels' machine code kept across processes in the cache
// root's cpu/<fingerprint>/ folder (jit/loop/disk_cache.h: the files, their format and failure
// modes), so that a program's second run loads its kernels instead of rendering them. render_cached
// (render_cache.h) looks here after a miss in the process's kernel cache and stores what it
// renders. KILN_JIT_DISK_CACHE=0 turns it off; KILN_CACHE_DIR moves it.
//
// Key material: the render key (the loop kernel's canonical encoding, the variant, the render
// path: render_cache.cpp) and the library's build fingerprint (runtime/build_fingerprint.h: its
// sources, asmjit's library, the toolchain), so that any change to the renderer, the vector math
// or asmjit misses every older entry, while a program relinked against the same library (its own
// code changed) keeps its kernels, and two programs share theirs. Nothing else decides a
// rendering's bytes: the host enters through the variant's ISA, and the addresses that differ
// between processes are written in at load (below).
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

// The library's build fingerprint (runtime/build_fingerprint.h), the folder of its entries.
const std::string& renderer_fingerprint();

// The key material of a rendering (`render_key`: render_cache.cpp's words) under `fingerprint`.
std::string cpu_kernel_material(std::span<const uint64_t> render_key,
                                const std::string& fingerprint);

// The builds of kiln whose entries a cache folder keeps beside the running build's: entries go
// to <root>/cpu/<fingerprint>/, whose folder a process marks as used when it opens the cache;
// the folders of all but the kKeptOtherBuilds most recently used other builds are removed then,
// in the background (every change to kiln's sources is a new build: without this the folder
// would grow by a program's kernels at every such rebuild).
inline constexpr int kKeptOtherBuilds = 3;
// Removes the build folders under `builds` (<root>/cpu) but this build's and the `others` most
// recently used; returns how many it removed.
int prune_cpu_kernel_builds(const std::string& builds, int others);

// The process's cache: nullptr when off (KILN_JIT_DISK_CACHE=0, no cache root).
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
