#include "runtime/allocator.h"

#include <cstdlib>

#include "runtime/error.h"

namespace kiln {

void* cpu_allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  void* p = std::aligned_alloc(kCpuAlignment, rounded);
  KILN_CHECK(p != nullptr, "out of memory: could not allocate {} bytes on cpu", nbytes);
  return p;
}

void cpu_free(void* p) noexcept { std::free(p); }

}  // namespace kiln
