// The functions a CPU kernel may call (call_block: sin and cos's huge-argument reduction, the
// baseline ISA's fused multiply-add lanes). A call puts its target's absolute address in the
// kernel's code, and address-space randomization moves it between processes: the disk cache
// (disk_cache.h) stores each call's target by its index in this list and writes the loading
// process's address back in its place.
#pragma once
#include <cstdint>
#include <span>

namespace kiln::jit {

// Where the fast path's code holds a call target's address: an 8-byte immediate at `offset`
// from the function's start (`movabs rax, target`).
struct CodeAddress {
  uint32_t offset = 0;
  const void* target = nullptr;
};

// Every function a kernel may call, in a fixed order (a target's index is its name on disk).
std::span<const void* const> cpu_kernel_call_targets();
// The index of `fn` in that list, or -1.
int cpu_kernel_call_target_index(const void* fn);

}  // namespace kiln::jit
