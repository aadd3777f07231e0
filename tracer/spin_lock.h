// The lock of a recording segment. It is taken twice per recorded op (record, and release when a
// lazy handle dies) and almost never contended (only another thread materializing a tensor this
// segment produces), so it is one atomic exchange to take and a plain store to give back. A
// waiter (rare) yields, since the holder may be running a whole flush.
#pragma once
#include <atomic>
#include <thread>

namespace kiln::tracer {

class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0; flag_.exchange(true, std::memory_order_acquire); ++spins) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace kiln::tracer
