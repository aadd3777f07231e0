#include "runtime/pooled.h"

#include <atomic>
#include <cstdint>
#include <new>

// Sanitizer builds use the global heap: ASan tracks the objects there, and TSan sees a block freed
// on one thread and reused on another as one (its malloc is instrumented; oneTBB's is not, so the
// reuse looked like a race between the two owners' constructors).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KILN_POOLED_GLOBAL_HEAP 1
#endif

#if !defined(KILN_POOLED_GLOBAL_HEAP)
#include <oneapi/tbb/scalable_allocator.h>
#endif

namespace kiln {

#if defined(KILN_POOLED_GLOBAL_HEAP)
void* PooledObject::operator new(std::size_t n) { return ::operator new(n); }
void PooledObject::operator delete(void* p, std::size_t) noexcept { ::operator delete(p); }
int64_t pooled_blocks_returned() { return 0; }
#else

namespace {

constexpr std::size_t kGranule = 16;
constexpr std::size_t kClasses = 16;  // up to 256 bytes

// Trivially destructible, so that reaching it is a plain thread-local access (no guard).
struct ThreadLists {
  void* head[kClasses];
  uint32_t count[kClasses];
  bool armed;     // ListsReturn registered for this thread
  bool draining;  // the thread is ending: frees go to oneTBB
};
constinit thread_local ThreadLists t_lists{};
std::atomic<int64_t> g_returned{0};  // pooled_blocks_returned()

// Gives a thread's lists back to oneTBB when it ends (made at the thread's first cached free).
struct ListsReturn {
  bool made = false;
  ~ListsReturn() {
    ThreadLists& t = t_lists;
    t.draining = true;
    int64_t returned = 0;
    for (std::size_t c = 0; c < kClasses; ++c) {
      while (void* p = t.head[c]) {
        t.head[c] = *static_cast<void**>(p);
        scalable_free(p);
        ++returned;
      }
      t.count[c] = 0;
    }
    g_returned.fetch_add(returned, std::memory_order_relaxed);
  }
};
thread_local ListsReturn t_return;

}  // namespace

void* PooledObject::operator new(std::size_t n) {
  const std::size_t c = (n - 1) / kGranule;  // n > 0: a class has a size
  if (c < kClasses) {
    ThreadLists& t = t_lists;
    if (void* p = t.head[c]) {
      t.head[c] = *static_cast<void**>(p);
      --t.count[c];
      return p;
    }
    n = (c + 1) * kGranule;  // any object of its class may reuse the block
  }
  if (void* p = scalable_malloc(n)) return p;
  throw std::bad_alloc();
}

void PooledObject::operator delete(void* p, std::size_t n) noexcept {
  if (p == nullptr) return;
  const std::size_t c = (n - 1) / kGranule;
  ThreadLists& t = t_lists;
  if (c < kClasses && t.count[c] < static_cast<uint32_t>(kPooledMaxCached) && !t.draining) {
    if (!t.armed) [[unlikely]] {
      t.armed = true;
      t_return.made = true;  // constructs it: its destructor runs at the thread's end
    }
    *static_cast<void**>(p) = t.head[c];
    t.head[c] = p;
    ++t.count[c];
    return;
  }
  scalable_free(p);
}

int64_t pooled_blocks_returned() { return g_returned.load(std::memory_order_relaxed); }

#endif

}  // namespace kiln
