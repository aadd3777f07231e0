// IntList: a non-owning view of int64 values that accepts braced lists, std::vector and DimVector,
// so every shape/dims parameter takes {2, 3} without building a vector.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "runtime/small_vector.h"

namespace kiln {

class IntList {
 public:
  IntList() = default;
  // Like std::span over a braced list: valid for the full expression of the call it is passed to.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  IntList(std::initializer_list<int64_t> il) : data_(il.begin()), size_(il.size()) {}
#pragma GCC diagnostic pop
  IntList(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}
  template <size_t N>
  IntList(const SmallVector<int64_t, N>& v) : data_(v.data()), size_(v.size()) {}
  IntList(const int64_t* d, size_t n) : data_(d), size_(n) {}

  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  DimVector dims() const { return DimVector(begin(), end()); }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kiln
