// Relaxed<T>: a value any thread may read while another sets it (a relaxed std::atomic<T>), that
// still reads and assigns like a plain T and copies like one.
//
// For the scalar fields of kiln::Config: the runtime reads them on every thread (config().jit on
// every dispatched op), and code may set them at run time while other threads run ops
// (tracer/recorder.h: "Setting config().jit = false at run time flushes the thread's segment at
// its next op"). A plain field written and read that way is a data race (undefined behaviour;
// ThreadSanitizer reports it). Relaxed order is enough: a field is one independent value, and
// nothing else is published through it. A relaxed load or store of a bool or int is a plain
// move on x86, so the dispatcher's hot path pays nothing.
#pragma once
#include <fmt/format.h>

#include <atomic>
#include <type_traits>

namespace kiln {

template <typename T>
class Relaxed {
  static_assert(std::is_trivially_copyable_v<T> && std::atomic<T>::is_always_lock_free);

 public:
  constexpr Relaxed(T v = T{}) noexcept : v_(v) {}  // NOLINT: implicit, like the T it stands for
  Relaxed(const Relaxed& o) noexcept : v_(o.load()) {}
  Relaxed& operator=(const Relaxed& o) noexcept {
    store(o.load());
    return *this;
  }
  Relaxed& operator=(T v) noexcept {
    store(v);
    return *this;
  }

  operator T() const noexcept { return load(); }  // NOLINT: reads like the plain field
  T load() const noexcept { return v_.load(std::memory_order_relaxed); }
  void store(T v) noexcept { v_.store(v, std::memory_order_relaxed); }

 private:
  std::atomic<T> v_;
};

}  // namespace kiln

// Formats as the value (log lines and messages that print a config field).
template <typename T>
struct fmt::formatter<kiln::Relaxed<T>> : fmt::formatter<T> {
  auto format(const kiln::Relaxed<T>& r, format_context& ctx) const {
    return fmt::formatter<T>::format(r.load(), ctx);
  }
};
