// The caching CPU allocator. Two levels:
//  - a per-thread cache of small blocks (classes up to 32 KiB), touched only by its thread, so
//    the hot path of a small eager op takes no lock and no atomic read-modify-write;
//  - a shared pool of every class behind one mutex, which serves the thread caches' misses,
//    keeps large blocks (their pages stay faulted in), and takes blocks freed on a thread whose
//    own cache is full or gone.
// A thread's cache goes to the shared pool when the thread exits. Under AddressSanitizer cached
// blocks are poisoned, so a use after free is still reported while the block sits in a cache,
// and the bytes past the request are poisoned too.
#include "runtime/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "runtime/allocator_size_class.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/large_blocks.h"

#if defined(__SANITIZE_ADDRESS__)
#define KILN_ALLOCATOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ALLOCATOR_ASAN 1
#endif
#endif
#ifdef KILN_ALLOCATOR_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace kiln {

namespace {

using detail::kMaxClassBytes;
using detail::kNumClasses;
using detail::size_class;
using detail::SizeClass;

// Poison a cached block; on hand-out, open exactly the requested bytes.
void poison(void* p, size_t n) {
#ifdef KILN_ALLOCATOR_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}
void hand_out(void* p, size_t requested, size_t block) {
#ifdef KILN_ALLOCATOR_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, block);
  ASAN_POISON_MEMORY_REGION(static_cast<char*>(p) + requested, block - requested);
#else
  (void)p, (void)requested, (void)block;
#endif
}
// Large classed blocks are mapped on huge-page boundaries (runtime/large_blocks.h), except under
// AddressSanitizer, whose heap puts a redzone after every block.
#ifdef KILN_ALLOCATOR_ASAN
constexpr bool mapped_block(size_t) { return false; }
#else
constexpr bool mapped_block(size_t block) { return detail::is_large_block(block); }
#endif

// Returns a classed block to the system.
void release(void* p, size_t block) {
#ifdef KILN_ALLOCATOR_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, block);
#endif
  if (mapped_block(block)) return detail::unmap_large_block(p, block);
  std::free(p);
}

constexpr int kThreadClasses = size_class(32 * 1024).index + 1;
constexpr int kThreadBinCapacity = 16;
// Up to 16 blocks per class, at most 256 KiB per class.
constexpr auto kBinCapacity = [] {
  std::array<uint8_t, kThreadClasses> cap{};
  for (int i = 0; i < kThreadClasses; ++i) {
    cap[i] = static_cast<uint8_t>(
        std::clamp<size_t>((256 << 10) / detail::class_bytes(i), 4, kThreadBinCapacity));
  }
  return cap;
}();

// Counters a thread updates alone: relaxed load + store (a plain mov on x86), read by
// cpu_allocator_stats() from other threads.
template <class T>
void bump(std::atomic<T>& c, T delta) {
  c.store(c.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

enum class CacheState : uint8_t { kNew, kLive, kDead };

struct ThreadCache {
  void* blocks[kThreadClasses][kThreadBinCapacity] = {};
  uint8_t count[kThreadClasses] = {};
  size_t bytes = 0;    // bytes in blocks[]
  uint64_t epoch = 0;  // empty_cpu_cache() calls seen (g_epoch)
  CacheState state = CacheState::kNew;
  std::atomic<int64_t> allocated{0};  // may go negative: blocks freed here, allocated elsewhere
  int64_t live = 0;                   // `allocated`, read only by this thread (CpuPeakScope)
  int64_t peak = 0;                   // the highest `live` since the innermost CpuPeakScope began
  std::atomic<int64_t> cached{0};
  std::atomic<uint64_t> hits{0}, misses{0};
  ThreadCache* prev = nullptr;  // registry of live caches (SharedPool::threads)
  ThreadCache* next = nullptr;
};

// Trivially destructible, so it stays usable (as kDead) after the reaper below has run.
thread_local constinit ThreadCache t_cache;

struct SharedPool {
  std::mutex mu;
  std::vector<void*> blocks[kNumClasses];
  size_t bytes = 0;
  // Counters of exited threads and of frees on threads whose cache is gone.
  int64_t allocated = 0;
  uint64_t hits = 0, misses = 0;
  ThreadCache* threads = nullptr;
};

// Never destroyed: blocks may be freed during static destruction or by exiting threads.
SharedPool& pool() {
  static SharedPool* p = new SharedPool;
  return *p;
}

std::atomic<uint64_t> g_epoch{0};

// Caller holds pool().mu.
void evict_until_fits(SharedPool& sp, size_t incoming) {
  for (int i = kNumClasses - 1; i >= 0 && sp.bytes + incoming > kCpuCacheLimit; --i) {
    size_t bytes = detail::class_bytes(i);
    while (!sp.blocks[i].empty() && sp.bytes + incoming > kCpuCacheLimit) {
      release(sp.blocks[i].back(), bytes);
      sp.blocks[i].pop_back();
      sp.bytes -= bytes;
    }
  }
}

// Caller holds pool().mu. The block is already poisoned.
void pool_put(SharedPool& sp, void* p, SizeClass sc) {
  if (sc.bytes > kCpuCacheLimit) return release(p, sc.bytes);
  evict_until_fits(sp, sc.bytes);
  try {
    sp.blocks[sc.index].push_back(p);
    sp.bytes += sc.bytes;
  } catch (const std::bad_alloc&) {  // no room for the pointer: give the block back instead
    release(p, sc.bytes);
  }
}

// Releases a thread cache's blocks to the system.
void flush(ThreadCache& tc) {
  for (int i = 0; i < kThreadClasses; ++i) {
    for (int k = 0; k < tc.count[i]; ++k) release(tc.blocks[i][k], detail::class_bytes(i));
    tc.count[i] = 0;
  }
  bump<int64_t>(tc.cached, -static_cast<int64_t>(tc.bytes));
  tc.bytes = 0;
}

// Moves an exiting thread's cache to the shared pool and folds its counters in.
void retire(ThreadCache& tc) {
  if (tc.state != CacheState::kLive) return;
  SharedPool& sp = pool();
  std::lock_guard lock(sp.mu);
  for (int i = 0; i < kThreadClasses; ++i) {
    for (int k = 0; k < tc.count[i]; ++k)
      pool_put(sp, tc.blocks[i][k], {i, detail::class_bytes(i)});
    tc.count[i] = 0;
  }
  tc.bytes = 0;
  sp.allocated += tc.allocated.load(std::memory_order_relaxed);
  sp.hits += tc.hits.load(std::memory_order_relaxed);
  sp.misses += tc.misses.load(std::memory_order_relaxed);
  (tc.prev ? tc.prev->next : sp.threads) = tc.next;
  if (tc.next) tc.next->prev = tc.prev;
  tc.state = CacheState::kDead;
}

struct ThreadCacheReaper {
  ~ThreadCacheReaper() { retire(t_cache); }
};
thread_local ThreadCacheReaper t_reaper;

// The slow-path entry: registers a new cache, or applies an empty_cpu_cache() it missed.
void prepare(ThreadCache& tc) {
  if (tc.state == CacheState::kNew) {
    [[maybe_unused]] ThreadCacheReaper* reaper = &t_reaper;  // registers its destructor
    SharedPool& sp = pool();
    std::lock_guard lock(sp.mu);
    tc.next = sp.threads;
    if (sp.threads) sp.threads->prev = &tc;
    sp.threads = &tc;
    tc.epoch = g_epoch.load(std::memory_order_relaxed);
    tc.state = CacheState::kLive;
  } else if (tc.state == CacheState::kLive) {
    tc.epoch = g_epoch.load(std::memory_order_relaxed);
    flush(tc);
  }
}

bool fast_path_ok(const ThreadCache& tc) {
  return tc.state == CacheState::kLive && tc.epoch == g_epoch.load(std::memory_order_relaxed);
}

// Counters go to the thread's cache, or to the pool when the thread's cache is gone.
// This thread's live bytes and their high-water mark (CpuPeakScope).
inline void count_live(ThreadCache& tc, int64_t bytes) {
  tc.live += bytes;
  if (tc.live > tc.peak) tc.peak = tc.live;
}

void count_allocation(ThreadCache& tc, size_t bytes, bool hit) {
  if (tc.state == CacheState::kLive) {
    count_live(tc, static_cast<int64_t>(bytes));
    bump<int64_t>(tc.allocated, static_cast<int64_t>(bytes));
    bump<uint64_t>(hit ? tc.hits : tc.misses, 1);
    return;
  }
  SharedPool& sp = pool();
  std::lock_guard lock(sp.mu);
  sp.allocated += static_cast<int64_t>(bytes);
  ++(hit ? sp.hits : sp.misses);
}

void* aligned_allocate(size_t bytes) {
  if (mapped_block(bytes)) return detail::map_large_block(bytes, config().huge_pages);
  return std::aligned_alloc(kCpuAlignment, bytes);
}

// A classed block (release() gives it back) or an unclassed one (std::free).
void* system_allocate(size_t bytes, bool classed) {
  auto get = [&] {
    return classed ? aligned_allocate(bytes) : std::aligned_alloc(kCpuAlignment, bytes);
  };
  void* p = get();
  if (p == nullptr) {  // release what the caches hold, then try once more
    empty_cpu_cache();
    p = get();
  }
  return p;
}

void* allocate_slow(ThreadCache& tc, SizeClass sc, size_t nbytes) {
  void* p = nullptr;
  {
    SharedPool& sp = pool();
    std::lock_guard lock(sp.mu);
    std::vector<void*>& bin = sp.blocks[sc.index];
    if (!bin.empty()) {
      p = bin.back();
      bin.pop_back();
      sp.bytes -= sc.bytes;
    }
  }
  bool hit = p != nullptr;
  if (!hit) p = system_allocate(sc.bytes, true);
  KILN_CHECK(p != nullptr, "out of memory: could not allocate {} bytes on cpu", nbytes);
  count_allocation(tc, sc.bytes, hit);
  hand_out(p, nbytes, sc.bytes);
  return p;
}

// Beyond the largest class: straight to the system, uncounted.
void* allocate_unclassed(size_t nbytes) {
  void* p = nullptr;
  if (nbytes <= SIZE_MAX - kCpuAlignment) {
    p = system_allocate((nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment, false);
  }
  KILN_CHECK(p != nullptr, "out of memory: could not allocate {} bytes on cpu", nbytes);
  return p;
}

}  // namespace

void* cpu_allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (nbytes > kMaxClassBytes) return allocate_unclassed(nbytes);
  SizeClass sc = size_class(nbytes);
  ThreadCache& tc = t_cache;
  if (fast_path_ok(tc)) [[likely]] {
    if (sc.index < kThreadClasses && tc.count[sc.index] > 0) {
      void* p = tc.blocks[sc.index][--tc.count[sc.index]];
      tc.bytes -= sc.bytes;
      bump<int64_t>(tc.cached, -static_cast<int64_t>(sc.bytes));
      bump<int64_t>(tc.allocated, static_cast<int64_t>(sc.bytes));
      count_live(tc, static_cast<int64_t>(sc.bytes));
      bump<uint64_t>(tc.hits, 1);
      hand_out(p, nbytes, sc.bytes);
      return p;
    }
  } else {
    prepare(tc);
  }
  return allocate_slow(tc, sc, nbytes);
}

void cpu_free(void* p, size_t nbytes) noexcept {
  if (p == nullptr) return;
  if (nbytes > kMaxClassBytes) return std::free(p);
  SizeClass sc = size_class(nbytes);
  poison(p, sc.bytes);
  ThreadCache& tc = t_cache;
  if (fast_path_ok(tc)) [[likely]] {
    if (sc.index < kThreadClasses && tc.count[sc.index] < kBinCapacity[sc.index] &&
        tc.bytes + sc.bytes <= kCpuThreadCacheBytes) {
      tc.blocks[sc.index][tc.count[sc.index]++] = p;
      tc.bytes += sc.bytes;
      bump<int64_t>(tc.cached, static_cast<int64_t>(sc.bytes));
      bump<int64_t>(tc.allocated, -static_cast<int64_t>(sc.bytes));
      tc.live -= static_cast<int64_t>(sc.bytes);
      return;
    }
  } else {
    prepare(tc);
  }
  SharedPool& sp = pool();
  std::lock_guard lock(sp.mu);
  pool_put(sp, p, sc);
  if (tc.state == CacheState::kLive) {
    bump<int64_t>(tc.allocated, -static_cast<int64_t>(sc.bytes));
    tc.live -= static_cast<int64_t>(sc.bytes);
  } else {
    sp.allocated -= static_cast<int64_t>(sc.bytes);
  }
}

CpuPeakScope::CpuPeakScope() {
  ThreadCache& tc = t_cache;
  start_ = tc.live;
  saved_peak_ = tc.peak;
  tc.peak = tc.live;
}

CpuPeakScope::~CpuPeakScope() {
  ThreadCache& tc = t_cache;
  tc.peak = std::max(saved_peak_, tc.peak);
}

int64_t CpuPeakScope::peak_bytes() const { return t_cache.peak - start_; }

size_t cpu_block_size(size_t nbytes) {
  if (nbytes == 0) return 0;
  if (nbytes > kMaxClassBytes) return (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  return size_class(nbytes).bytes;
}

CpuAllocatorStats cpu_allocator_stats() {
  SharedPool& sp = pool();
  std::lock_guard lock(sp.mu);
  int64_t allocated = sp.allocated, cached = static_cast<int64_t>(sp.bytes);
  CpuAllocatorStats s;
  s.hits = sp.hits;
  s.misses = sp.misses;
  for (ThreadCache* tc = sp.threads; tc != nullptr; tc = tc->next) {
    allocated += tc->allocated.load(std::memory_order_relaxed);
    cached += tc->cached.load(std::memory_order_relaxed);
    s.hits += tc->hits.load(std::memory_order_relaxed);
    s.misses += tc->misses.load(std::memory_order_relaxed);
  }
  s.allocated = static_cast<size_t>(std::max<int64_t>(allocated, 0));
  s.cached = static_cast<size_t>(std::max<int64_t>(cached, 0));
  return s;
}

void empty_cpu_cache() {
  g_epoch.fetch_add(1, std::memory_order_relaxed);
  ThreadCache& tc = t_cache;
  if (tc.state == CacheState::kLive) prepare(tc);  // flushes this thread's cache now
  SharedPool& sp = pool();
  {
    std::lock_guard lock(sp.mu);
    for (int i = 0; i < kNumClasses; ++i) {
      for (void* p : sp.blocks[i]) release(p, detail::class_bytes(i));
      std::vector<void*>().swap(sp.blocks[i]);
    }
    sp.bytes = 0;
  }
#if defined(__GLIBC__)
  malloc_trim(0);  // hand freed heap pages back to the system too
#endif
}

}  // namespace kiln
