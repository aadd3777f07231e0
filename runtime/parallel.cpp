#include "runtime/parallel.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <memory>
#include <mutex>

#include "runtime/config.h"

namespace kiln {

namespace {

thread_local bool tls_in_parallel = false;

// One arena per thread count; rebuilt when KILN_NUM_THREADS is changed through config().
tbb::task_arena& arena() {
  static std::mutex mu;
  static std::unique_ptr<tbb::task_arena> a;
  static int a_threads = 0;
  int want = num_threads();
  std::lock_guard<std::mutex> lock(mu);
  if (!a || a_threads != want) {
    a = std::make_unique<tbb::task_arena>(want);
    a_threads = want;
  }
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
