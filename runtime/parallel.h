// parallel_for over an index range with oneTBB, capped by KILN_NUM_THREADS. Ranges below the grain
// run inline on the calling thread, so tiny tensors never pay for task scheduling.
#pragma once
#include <cstdint>
#include <functional>

namespace kiln {

// Elements below which a memory-bound elementwise loop is not worth splitting.
inline constexpr int64_t kParallelGrain = 32768;

namespace detail {
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain,
                       const std::function<void(int64_t, int64_t)>& fn);
}

// Calls fn(b, e) on disjoint sub-ranges covering [begin, end).
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& fn) {
  if (end - begin <= grain) {
    if (end > begin) fn(begin, end);
    return;
  }
  detail::parallel_for_impl(begin, end, grain, std::function<void(int64_t, int64_t)>(fn));
}

// True while running inside a kiln parallel region (nested loops then run inline).
bool in_parallel_region();

}  // namespace kiln
