// Small objects made on every op (TensorImpl, Storage) come from a per-thread free list in front
// of oneTBB's scalable allocator: eager mode makes two of them per op and the recorder four
// (the lazy result, then the plan's buffer), and oneTBB's own path costs ~110 instructions an
// allocation and ~70 a free (its thread lookup included), a tenth of an eager op on 16 floats
// (callgrind, kiln-perf host_loop; docs/performance.md). A pop or push of the list is a few
// instructions. Objects are grouped in 16-byte size classes up to 256 bytes; each thread keeps
// at most kPooledMaxCached of each class and gives the rest to oneTBB, and its lists go back to
// oneTBB when the thread ends. An object freed on another thread than the one that made it joins
// the freeing thread's list (memory is memory). Sanitizer builds keep the global heap, so that ASan
// still tracks these objects.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln {

struct PooledObject {
  static void* operator new(std::size_t n);
  // Sized: `delete` of a class with a virtual destructor passes the dynamic type's size.
  static void operator delete(void* p, std::size_t n) noexcept;
};

// Objects each thread keeps per size class (tests).
inline constexpr int kPooledMaxCached = 128;

// Blocks the threads' lists gave back to oneTBB as their threads ended, since the process
// started (tests: a list that never went back would only leak). 0 in sanitizer builds, which
// keep no lists.
int64_t pooled_blocks_returned();

}  // namespace kiln
