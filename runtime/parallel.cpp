#include "runtime/parallel.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <map>
#include <memory>
#include <mutex>

#include "runtime/config.h"

namespace kiln {

namespace {

thread_local bool tls_in_parallel = false;

// One arena per thread count, created on first use and kept for the process: another thread may
// still be running in the arena of the previous count when KILN_NUM_THREADS is changed through
// config(), so arenas are never destroyed while the process runs.
tbb::task_arena& arena() {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<tbb::task_arena>> arenas;
  int want = num_threads();
  std::lock_guard<std::mutex> lock(mu);
  auto& a = arenas[want];
  if (!a) a = std::make_unique<tbb::task_arena>(want);
  return *a;
}

}  // namespace

bool in_parallel_region() { return tls_in_parallel; }

void detail::parallel_for_impl(int64_t begin, int64_t end, int64_t grain,
                               const std::function<void(int64_t, int64_t)>& fn) {
  if (tls_in_parallel || num_threads() == 1) {
    fn(begin, end);
    return;
  }
  arena().execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(begin, end, grain),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        // Restored on exit, also when fn throws.
                        struct Mark {
                          bool was = tls_in_parallel;
                          Mark() { tls_in_parallel = true; }
                          ~Mark() { tls_in_parallel = was; }
                        } mark;
                        fn(r.begin(), r.end());
                      });
  });
}

}  // namespace kiln
