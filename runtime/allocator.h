// CPU memory: 64-byte aligned blocks (a cache line, and a full AVX-512 vector), from a caching
// allocator. Freed blocks are kept per size class and handed out again, so an eager op does not
// pay malloc/free for small outputs, nor fresh page faults for large ones (docs/architecture.md,
// "CPU allocator"). Memory is not zeroed. Blocks may be freed on any thread.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln {

inline constexpr size_t kCpuAlignment = 64;
// At most this many bytes sit in the shared pool; freeing past it releases cached blocks, the
// largest first. Each thread also keeps up to kCpuThreadCacheBytes of small blocks (<= 32 KiB).
inline constexpr size_t kCpuCacheLimit = size_t{1} << 30;
inline constexpr size_t kCpuThreadCacheBytes = size_t{2} << 20;

// Returns nullptr for 0 bytes. When the system is out of memory the cache is emptied and the
// allocation retried once before kiln::Error is thrown.
void* cpu_allocate(size_t nbytes);
// nbytes must be the size passed to cpu_allocate (it picks the size class). nullptr is ignored.
void cpu_free(void* p, size_t nbytes) noexcept;

// The bytes a request of nbytes really occupies (its size class); 0 for 0.
size_t cpu_block_size(size_t nbytes);

// A kernel's scratch block from this allocator, freed when it goes: reused between calls (no
// fresh page faults, and no munmap of 4 KiB pages, which on a shadow-paged VM makes every page
// touched afterwards fault again; docs/jit.md "Compile time"), huge pages from 2 MiB.
class CpuScratch {
 public:
  CpuScratch() = default;
  explicit CpuScratch(size_t nbytes) : p_(cpu_allocate(nbytes)), n_(nbytes) {}
  ~CpuScratch() { cpu_free(p_, n_); }
  CpuScratch(CpuScratch&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  CpuScratch& operator=(CpuScratch&& o) noexcept {
    if (this != &o) {
      cpu_free(p_, n_);
      p_ = o.p_;
      n_ = o.n_;
      o.p_ = nullptr;
    }
    return *this;
  }
  std::byte* get() const { return static_cast<std::byte*>(p_); }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

struct CpuAllocatorStats {
  size_t allocated = 0;  // bytes in blocks handed out and not yet freed (class sizes)
  size_t cached = 0;     // bytes in freed blocks kept for reuse (shared pool + thread caches)
  uint64_t hits = 0;     // allocations served from a cache
  uint64_t misses = 0;   // allocations that went to the system
};
CpuAllocatorStats cpu_allocator_stats();

// Measures the CPU memory a scope of this thread allocates and holds at once: peak_bytes() is the
// highest the bytes this thread allocated and has not freed (class sizes) rose above their value
// when the scope began. Blocks freed on other threads count there. Scopes nest; each costs two
// thread-local reads, and the allocator keeps the high-water mark on every allocation anyway.
class CpuPeakScope {
 public:
  CpuPeakScope();
  ~CpuPeakScope();
  CpuPeakScope(const CpuPeakScope&) = delete;
  CpuPeakScope& operator=(const CpuPeakScope&) = delete;
  int64_t peak_bytes() const;

 private:
  int64_t start_;
  int64_t saved_peak_;
};

// Releases every cached block to the system: the shared pool and this thread's cache now, other
// threads' small-block caches at their next allocation or free (or their exit).
void empty_cpu_cache();

}  // namespace kiln
