#include "runtime/pooled.h"

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
void PooledObject::operator delete(void* p) noexcept { ::operator delete(p); }
#else
void* PooledObject::operator new(std::size_t n) {
  if (void* p = scalable_malloc(n)) return p;
  throw std::bad_alloc();
}
void PooledObject::operator delete(void* p) noexcept { scalable_free(p); }
#endif

}  // namespace kiln
