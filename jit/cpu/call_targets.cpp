#include "jit/cpu/call_targets.h"

#include <array>

#include "jit/cpu/vec_emitter.h"

namespace kiln::jit {

std::span<const void* const> cpu_kernel_call_targets() {
  // Append only: an index names its function in the entries this build writes.
  static const std::array<const void*, 4> targets = {
      reinterpret_cast<const void*>(&reduce_pio2_huge_block<float>),
      reinterpret_cast<const void*>(&reduce_pio2_huge_block<double>),
      reinterpret_cast<const void*>(&fma_lanes_block<float>),
      reinterpret_cast<const void*>(&fma_lanes_block<double>)};
  return targets;
}

int cpu_kernel_call_target_index(const void* fn) {
  const std::span<const void* const> targets = cpu_kernel_call_targets();
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i] == fn) return static_cast<int>(i);
  return -1;
}

}  // namespace kiln::jit
