// Pieces shared by the indexing kernels (ops/index.cpp, ops/one_hot.cpp): the record of an
// out-of-range index found inside a parallel loop, and the geometry of a 0-dim tensor seen as a
// 1-D tensor of one element (PyTorch's ensure_nonempty_dim/size for gather and scatter).
#pragma once
#include <atomic>
#include <cstdint>

#include "runtime/error.h"
#include "runtime/tensor_impl.h"

namespace kiln {

// Kernels must not throw from inside parallel_for (a worker would unwind through TBB); they
// record the first offending value, stop their work, and the caller raises after the loop.
class BadIndex {
 public:
  bool seen() const { return seen_.load(std::memory_order_relaxed); }
  void record(int64_t v) {
    bool expected = false;
    if (seen_.compare_exchange_strong(expected, true)) value_.store(v);
  }
  int64_t value() const { return value_.load(); }

 private:
  std::atomic<bool> seen_{false};
  std::atomic<int64_t> value_{0};
};

// The indexing ops' error for an index out of [0, size) along dim (gather, index_select,
// scatter_add, and the JIT's scatter_row_index, which reports scatter_add's).
[[noreturn]] inline void fail_index(const char* op, int64_t value, int64_t dim, int64_t size) {
  fail("{}: index {} is out of range for dim {} of size {} (expected an index in [0, {}))", op,
       value, dim, size, size);
}

inline DimVector nonempty_sizes(const TensorImpl* t) {
  return t->dim() == 0 ? DimVector{1} : t->sizes();
}
inline DimVector nonempty_strides(const TensorImpl* t) {
  return t->dim() == 0 ? DimVector{0} : t->strides();
}

}  // namespace kiln
