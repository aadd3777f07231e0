#include "tracer/eager_tier.h"

#include <atomic>

#include "runtime/logging.h"
#include "runtime/profiler.h"

namespace kiln::tracer {

namespace {
std::atomic<int64_t> g_eager_tier_ops{0};
}  // namespace

void EagerTier::on_sync() {
  if (ran_eagerly_ > 0) {
    g_eager_tier_ops.fetch_add(ran_eagerly_, std::memory_order_relaxed);
    ran_eagerly_ = 0;
  }
  const bool small = ops_ <= kSmallOps && work_ <= kSmallWork;
  if (ops_ == 0) {
    // Nothing between two syncs (a sync of a value already read): not an interval.
  } else if (!small) {
    leave();
  } else if (!eager_ && ++small_in_a_row_ >= kEnterAfter) {
    eager_ = true;
    KILN_DEBUG(Tracer,
               "eager tier: {} small intervals between syncs in a row; small ops run "
               "eagerly",
               small_in_a_row_);
    profiler::record_fallback("eager tier", "small ops between frequent syncs");
  }
  ops_ = 0;
  work_ = 0;
}

void EagerTier::leave() {
  if (eager_)
    KILN_DEBUG(Tracer, "eager tier: an interval of {} ops, {} elements; recording again", ops_,
               work_);
  eager_ = false;
  small_in_a_row_ = 0;
}

int64_t eager_tier_ops() { return g_eager_tier_ops.load(std::memory_order_relaxed); }

}  // namespace kiln::tracer
