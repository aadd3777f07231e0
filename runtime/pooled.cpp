#include "runtime/pooled.h"

#include <new>

#if !defined(__SANITIZE_ADDRESS__)
#include <oneapi/tbb/scalable_allocator.h>
#endif

namespace kiln {

#if defined(__SANITIZE_ADDRESS__)
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
