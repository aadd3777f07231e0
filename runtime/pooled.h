// Small objects made on every op (TensorImpl, Storage) are allocated from oneTBB's scalable
// allocator (thread-local caches, no global lock) instead of the global heap: the recorder makes
// two of each per recorded op, so their allocation is a visible share of per-op overhead.
// Sanitizer builds keep the global heap, so that ASan still tracks these objects.
#pragma once
#include <cstddef>

namespace kiln {

struct PooledObject {
  static void* operator new(std::size_t n);
  static void operator delete(void* p) noexcept;
};

}  // namespace kiln
