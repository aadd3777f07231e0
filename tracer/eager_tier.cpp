#include "tracer/eager_tier.h"

#include <atomic>

#include "runtime/logging.h"
#include "runtime/profiler.h"

namespace kiln::tracer {

namespace {
std::atomic<int64_t> g_eager_tier_ops{0};

// Ticks of the time-stamp counter (constant-rate on the x86 machines kiln runs on: only one
// thread's ticks are ever compared with each other), a few cycles where the system clock costs
// ~20 ns a read: host_loop syncs every 7 small ops.
int64_t ticks() {
#if defined(__x86_64__)
  return static_cast<int64_t>(__builtin_ia32_rdtsc());
#else
  return profiler::now_ns();
#endif
}

std::atomic<EagerTier::Clock> g_clock{&ticks};
}  // namespace

void EagerTier::set_clock(Clock clock) {
  g_clock.store(clock ? clock : &ticks, std::memory_order_relaxed);
}

void EagerTier::on_sync() {
  lane_.close();
  IntervalCount& c = lane_.count;
  if (c.eager_ops > 0) {
    g_eager_tier_ops.fetch_add(c.eager_ops, std::memory_order_relaxed);
    c.eager_ops = 0;
  }
  const bool small = c.ops <= kSmallOps && c.work <= kSmallWork;
  closed_ = Closed{c.sig, c.ops, c.work, small,
                   c.ran_eagerly && c.recorded ? MeasuredTier::Ran::Both
                   : c.ran_eagerly             ? MeasuredTier::Ran::Eagerly
                                               : MeasuredTier::Ran::Recorded};
  if (c.ops == 0) {
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
  const uint64_t before = c.ops == 0 ? c.before : c.sig;  // an empty interval changes nothing
  c = IntervalCount{};
  c.before = before;
}

void EagerTier::after_flush(bool ok, bool ran_graph, bool planned_hit) {
  if (closed_.ops == 0) return;  // a sync with nothing since the last one: no interval
  const int64_t now = g_clock.load(std::memory_order_relaxed)();
  MeasuredTier::Interval it;
  it.sig = closed_.sig;
  it.ops = closed_.ops;
  it.work = closed_.work;
  // Ops that ran eagerly with a flush that still had work: a higher-order op was recorded.
  it.ran = closed_.ran == MeasuredTier::Ran::Eagerly && ran_graph ? MeasuredTier::Ran::Both
                                                                  : closed_.ran;
  // The fixed rule's small intervals are its own; a flush that threw is no run worth timing.
  it.timed = ok && start_ticks_ >= 0 && !closed_.small;
  it.planned_hit = planned_hit;
  it.ticks = now - start_ticks_;
  measured_.end_interval(it);
  start_ticks_ = ok ? now : -1;
  closed_.ops = 0;
  measured_eager_ = ok && !eager_ && measured_.eager_next();
}

void EagerTier::reset_measured() {
  lane_.close();
  measured_.clear();
  measured_eager_ = false;
  start_ticks_ = -1;
  closed_ = Closed{};
}

void EagerTier::leave() {
  lane_.close();
  if (eager_)
    KILN_DEBUG(Tracer, "eager tier: an interval of {} ops, {} elements; recording again",
               lane_.count.ops, lane_.count.work);
  eager_ = false;
  small_in_a_row_ = 0;
}

int64_t eager_tier_ops() { return g_eager_tier_ops.load(std::memory_order_relaxed); }

}  // namespace kiln::tracer
