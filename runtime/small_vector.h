// SmallVector: a vector with inline storage for N elements, so sizes and strides of
// ordinary tensors never touch the heap (DESIGN.md, "The hot path").
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <vector>

namespace kiln {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values");

 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, T v = T()) { assign(n, v); }
  SmallVector(std::initializer_list<T> il) { assign(il.begin(), il.end()); }
  template <class It>
  requires(!std::is_integral_v<It>) SmallVector(It b, It e) { assign(b, e); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { steal(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  template <class It>
  requires(!std::is_integral_v<It>) void assign(It b, It e) {
    size_t n = static_cast<size_t>(std::distance(b, e));
    clear();
    reserve(n);
    std::copy(b, e, data_);
    size_ = n;
  }
  void assign(size_t n, T v) {
    clear();
    reserve(n);
    std::fill_n(data_, n, v);
    size_ = n;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }

  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = std::max(n, cap_ * 2);
    T* p = static_cast<T*>(::operator new(cap * sizeof(T)));
    if (size_) std::memcpy(static_cast<void*>(p), data_, size_ * sizeof(T));
    if (data_ != inline_data()) ::operator delete(data_);
    data_ = p;
    cap_ = cap;
  }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void push_back(T v) {
    if (size_ == cap_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void insert(size_t pos, T v) {
    push_back(v);
    for (size_t i = size_ - 1; i > pos; --i) data_[i] = data_[i - 1];
    data_[pos] = v;
  }
  void erase(size_t pos) {
    for (size_t i = pos + 1; i < size_; ++i) data_[i - 1] = data_[i];
    --size_;
  }

  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

  // An inline loop: std::equal on integers becomes a call to memcmp, whose call and dispatch
  // cost more than the few elements compared (shapes are compared on every recorded op).
  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)
      if (!(a.data_[i] == b.data_[i])) return false;
    return true;
  }

 private:
  T* inline_data() { return reinterpret_cast<T*>(inline_); }
  void release() {
    if (data_ != inline_data()) ::operator delete(data_);
    data_ = inline_data();
    cap_ = N;
    size_ = 0;
  }
  void steal(SmallVector& o) {
    if (o.data_ == o.inline_data()) {
      data_ = inline_data();
      cap_ = N;
      std::memcpy(static_cast<void*>(data_), o.data_, o.size_ * sizeof(T));
      size_ = o.size_;
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.data_ = o.inline_data();
      o.cap_ = N;
    }
    o.size_ = 0;
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* data_ = inline_data();
  size_t size_ = 0;
  size_t cap_ = N;
};

// Sizes and strides of a tensor; 6 dims inline covers nearly every real tensor.
using DimVector = SmallVector<int64_t, 6>;

}  // namespace kiln
