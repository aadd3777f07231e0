// A process-wide log of durations in nanoseconds, kept in the order they were added: the CPU
// target's render times and baseline-making times, which kiln-perf reads per job and the tests
// count (render_cache.h cpu_jit_compile_times, baseline_kernel.h cpu_jit_baseline_times).
// Thread-safe. Instances live in leaked statics: planning may run during exit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace kiln::jit {

class TimeLog {
 public:
  void add(int64_t ns) {
    std::lock_guard lock(mu_);
    ns_.push_back(ns);
  }
  // The durations from index `first` on (none where there are not that many).
  std::vector<int64_t> since(size_t first) const {
    std::lock_guard lock(mu_);
    if (first >= ns_.size()) return {};
    return {ns_.begin() + static_cast<std::ptrdiff_t>(first), ns_.end()};
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return ns_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<int64_t> ns_;
};

}  // namespace kiln::jit
