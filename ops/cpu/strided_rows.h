// StridedRows: walks a row-major index space for K operands given by element strides, calling
// f(offsets, n) on runs of n consecutive elements along the innermost dim. Unlike
// ElementwiseLoop it hands the callback element offsets rather than calling a type-erased inner
// loop, so index kernels (gather, scatter, tril) can be written as inlined typed lambdas that
// read an index, check it and address a third tensor with it.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "runtime/small_vector.h"

namespace kiln {

template <int K>
class StridedRows {
 public:
  using Offsets = std::array<int64_t, K>;

  // sizes: the index space; strides[k]: operand k's stride (in elements) per dim of the space.
  // With coalesce, dims that are contiguous for every operand are merged (the linear order of
  // the space is unchanged); without it the innermost dim stays a dim of its own, which kernels
  // that need the row/column coordinates (tril) rely on.
  StridedRows(const DimVector& sizes, const std::array<DimVector, K>& strides,
              bool coalesce = true) {
    const int nd = static_cast<int>(sizes.size());
    numel_ = 1;
    for (int64_t s : sizes) numel_ *= s;
    for (int d = 0; d < nd; ++d) {
      if (coalesce && sizes[d] == 1) continue;
      if (coalesce && !sizes_.empty()) {
        bool merge = true;
        for (int k = 0; k < K && merge; ++k) merge = strides_[k].back() == strides[k][d] * sizes[d];
        if (merge) {
          sizes_.back() *= sizes[d];
          for (int k = 0; k < K; ++k) strides_[k].back() = strides[k][d];
          continue;
        }
      }
      sizes_.push_back(sizes[d]);
      for (int k = 0; k < K; ++k) strides_[k].push_back(strides[k][d]);
    }
    if (sizes_.empty()) {  // a single element
      sizes_.push_back(1);
      for (int k = 0; k < K; ++k) strides_[k].push_back(0);
    }
  }

  int64_t numel() const { return numel_; }
  int64_t row_size() const { return sizes_.back(); }
  int64_t inner_stride(int k) const { return strides_[k].back(); }

  // Calls f(const Offsets&, int64_t n) for the runs covering linear indices [begin, end). The
  // offsets are those of the run's first element; element i of the run is at
  // offsets[k] + i * inner_stride(k).
  template <class F>
  void for_range(int64_t begin, int64_t end, F&& f) const {
    if (begin >= end) return;
    const int nd = static_cast<int>(sizes_.size());
    const int last = nd - 1;
    DimVector idx(nd);
    Offsets off{};
    int64_t rem = begin;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % sizes_[d];
      rem /= sizes_[d];
      for (int k = 0; k < K; ++k) off[k] += idx[d] * strides_[k][d];
    }
    int64_t i = begin;
    while (i < end) {
      const int64_t n = std::min(sizes_[last] - idx[last], end - i);
      f(static_cast<const Offsets&>(off), n);
      i += n;
      idx[last] += n;
      for (int k = 0; k < K; ++k) off[k] += n * strides_[k][last];
      for (int d = last; d > 0 && idx[d] == sizes_[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (int k = 0; k < K; ++k) off[k] += strides_[k][d - 1] - sizes_[d] * strides_[k][d];
      }
    }
  }

 private:
  int64_t numel_ = 1;
  DimVector sizes_;
  std::array<DimVector, K> strides_;
};

}  // namespace kiln
