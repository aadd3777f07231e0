// Ref<T>: an intrusive, thread-safe reference-counted pointer. Tensor handles are copied on every
// op call, so the count lives in the object (one atomic add, no control block).
#pragma once
#include <atomic>
#include <cstdint>
#include <utility>

namespace kiln {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  int32_t use_count() const { return refs_.load(std::memory_order_relaxed); }

 protected:
  // Takes a reference unless the count already reached zero (the object is being destroyed):
  // how an owner of a plain pointer upgrades it safely (Storage::try_ref).
  bool try_retain() const {
    int32_t n = refs_.load(std::memory_order_relaxed);
    while (n > 0) {
      if (refs_.compare_exchange_weak(n, n + 1, std::memory_order_acquire)) return true;
    }
    return false;
  }

  virtual ~RefCounted() = default;

 private:
  template <class T>
  friend class Ref;
  void retain() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }
  // Out of line: inlined, GCC pairs a class's own operator new (PooledObject) with the global
  // delete of a speculatively devirtualized destructor and warns (-Wmismatched-new-delete).
  [[gnu::noinline]] void destroy() const { delete this; }
  mutable std::atomic<int32_t> refs_{0};
};

template <class T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}
  explicit Ref(T* p) : p_(p) {
    if (p_) p_->retain();
  }
  Ref(const Ref& o) : p_(o.p_) {
    if (p_) p_->retain();
  }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(const Ref& o) {
    Ref(o).swap(*this);
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    Ref(std::move(o)).swap(*this);
    return *this;
  }
  ~Ref() {
    if (p_) p_->release();
  }
  void swap(Ref& o) noexcept { std::swap(p_, o.p_); }
  // Wraps a pointer whose reference was already taken (RefCounted::try_retain).
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  // The first reference to a new object nobody else can see yet: a plain store, no atomic add.
  static Ref first(T* p) {
    p->refs_.store(1, std::memory_order_relaxed);
    return adopt(p);
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  friend bool operator==(const Ref& a, const Ref& b) { return a.p_ == b.p_; }

 private:
  T* p_ = nullptr;
};

template <class T, class... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>::first(new T(std::forward<Args>(args)...));
}

}  // namespace kiln
