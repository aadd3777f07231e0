// Large CPU blocks (kLargeBlockBytes and up) for the caching allocator (runtime/allocator.cpp),
// mapped straight from the kernel at a 2 MiB boundary and, unless KILN_HUGE_PAGES=0, advised for
// transparent huge pages (madvise MADV_HUGEPAGE). Why: a tensor of tens of MB on 4 KiB pages
// takes a page fault per 4 KiB the first time it is written, and a TLB entry per 4 KiB whenever
// it is streamed. On the 2-core Zen 5 VM (2026-12-02) faulting 64 MiB in took 190 ms on 4 KiB
// pages, 155 ms on fresh huge pages and 4 ms on huge pages the guest had used before (the
// hypervisor backs fresh guest memory page by page either way); kiln-perf's eager first calls
// (new 32-64 MiB outputs) ran 40-85% shorter (gelu 640 -> 365 ms, softmax 20-40 -> 5-6);
// steady-state runs reuse cached blocks and did not change there. With THP "never", or no free huge
// page, a block is plain 4 KiB pages and nothing else changes. A block's size alone says how it was
// allocated (is_large_block), so switching the flag at run time never mismatches a free. Elsewhere
// than Linux large blocks are aligned_alloc'd.
#pragma once
#include <cstddef>

namespace kiln::detail {

inline constexpr size_t kLargeBlockBytes = size_t{2} << 20;  // one x86-64 huge page

constexpr bool is_large_block(size_t block_bytes) { return block_bytes >= kLargeBlockBytes; }

// A block of `bytes` (>= kLargeBlockBytes) aligned to kLargeBlockBytes; nullptr when the system
// has no memory for it. huge_pages: ask for transparent huge pages.
void* map_large_block(size_t bytes, bool huge_pages);
// Returns a block of map_large_block(bytes, ...) to the system.
void unmap_large_block(void* p, size_t bytes) noexcept;

}  // namespace kiln::detail
