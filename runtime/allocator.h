// CPU memory: 64-byte aligned blocks (a cache line, and a full AVX-512 vector).
#pragma once
#include <cstddef>

namespace kiln {

inline constexpr size_t kCpuAlignment = 64;

void* cpu_allocate(size_t nbytes);  // throws kiln::Error when out of memory
void cpu_free(void* p) noexcept;

}  // namespace kiln
