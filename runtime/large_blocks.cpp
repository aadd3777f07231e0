// See runtime/large_blocks.h.
#include "runtime/large_blocks.h"

#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace kiln::detail {

#if defined(__linux__)

namespace {

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t round_to_pages(size_t bytes) {
  const size_t page = page_size();
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* map_large_block(size_t bytes, bool huge_pages) {
  const size_t length = round_to_pages(bytes);
  if (length < bytes || length > SIZE_MAX - kLargeBlockBytes) return nullptr;
  // Map one huge page more than needed, then cut the unaligned head and the tail off.
  const size_t span = length + kLargeBlockBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kLargeBlockBytes - 1) & ~uintptr_t{kLargeBlockBytes - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = aligned + length;
  if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
  void* p = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
  // Advice only: EINVAL where the kernel has no THP is the same as not asking.
  if (huge_pages) madvise(p, length, MADV_HUGEPAGE);
#else
  (void)huge_pages;
#endif
  return p;
}

void unmap_large_block(void* p, size_t bytes) noexcept {
  if (p != nullptr) munmap(p, round_to_pages(bytes));
}

#else

void* map_large_block(size_t bytes, bool) {
  const size_t rounded = (bytes + kLargeBlockBytes - 1) / kLargeBlockBytes * kLargeBlockBytes;
  return rounded < bytes ? nullptr : std::aligned_alloc(kLargeBlockBytes, rounded);
}

void unmap_large_block(void* p, size_t) noexcept { std::free(p); }

#endif

}  // namespace kiln::detail
