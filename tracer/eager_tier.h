// The eager tier: a thread whose program syncs after every few small ops runs those ops eagerly
// instead of recording them (docs/tracer.md "The eager tier").
//
// Recording pays per sync: the flush follows or looks up the region, runs its plan and hands
// the results over, about 2 µs on the slower test VMs against about 0.5 µs for an eager op on a
// small tensor. A loop such as `while (err.item<float>() > tol) { ... }` over a few small
// tensors, or code that prints each result, ran 3x slower recorded than eagerly, and nothing was
// fused in exchange. Each thread's recorder keeps one EagerTier that watches the intervals
// between its sync points (item, data_ptr, to_vector, print, kiln::sync, ...):
//
// - an interval is *small* when it dispatched at most kSmallOps ops and their work (for each op
//   the element count of the largest tensor it reads or writes, summed) is at most kSmallWork;
// - after kEnterAfter small intervals in a row the thread enters the tier: its ops run eagerly
//   while the interval stays small and the thread's segment holds nothing pending (a
//   higher-order op recorded meanwhile keeps later ops recorded until the next flush);
// - the first op that makes an interval not small is recorded, and the thread leaves the tier
//   (the next kEnterAfter intervals must be small again). So a long chain or a large tensor is
//   never held eagerly for more than kSmallOps ops.
//
// Beyond that fixed rule, intervals of up to MeasuredTier::kMaxOps ops are timed both ways once
// their region runs a plan, and run eagerly where that measured faster (tracer/measured_tier.h).
//
// Eager execution is what KILN_JIT=0 does, and JIT kernels give eager's bits within the
// numerical contract, so the tier changes no result, only where an error surfaces (at the op,
// as in eager mode, instead of at the sync). KILN_JIT_EAGER_TIER=0 (config().jit_eager_tier)
// records every op. Not thread-safe: each recorder's own thread uses its tier.
#pragma once
#include <cstdint>

#include "runtime/eager_lane.h"
#include "runtime/op_list.h"
#include "tracer/measured_tier.h"

namespace kiln::tracer {

class EagerTier {
 public:
  // `lane`: the recorder's (ModeHandler::eager_lane), which holds the interval's counts.
  explicit EagerTier(EagerLane& lane) : lane_(lane) {}

  // Near the break-even measured on the 2-core Intel VM (docs/performance.md, 2026-11-29): 8
  // chained ops of 1024 floats and a sync ran 6.6 µs eagerly, 7.4 recorded; 16 of them 11.5 and
  // 12.9; 8 ops of 4096 floats 10.6 eagerly, 8.7 recorded (fused).
  static constexpr int64_t kSmallOps = 16;
  static constexpr int64_t kSmallWork = 16384;
  static constexpr int kEnterAfter = 4;

  // Counts an op of `work` elements into the current interval; true when it should run
  // eagerly. `segment_empty` is asked only while the op would run eagerly.
  // When it returns true, the lane is open for the interval's next ops (runtime/eager_lane.h):
  // the dispatcher counts them as this function would and runs them eagerly within the same
  // bounds.
  template <class SegmentEmpty>
  bool run_eagerly(OpId op, int64_t work, SegmentEmpty&& segment_empty) {
    IntervalCount& c = lane_.count;
    bool eager = false, past_small = false;
    if (running_eagerly()) {
      // Past the bounds, or something pending: this op is recorded (past the fixed rule's, the
      // tier is left; a measured choice ends).
      const bool fits = c.fits(work, bounds());
      eager = fits && segment_empty();
      if (eager_)
        past_small = !fits;
      else
        measured_eager_ = eager;
    }
    if (eager) {
      c.add_eager(op, work);
      open_lane();
    } else {
      c.add(op, work);
      c.recorded = true;
    }
    if (past_small) leave();  // after counting: its log names the whole interval
    return eager;
  }
  // Opens the lane with the bounds of the tier's current choice (the segment must hold
  // nothing pending: the caller knows).
  void open_lane() {
    if (running_eagerly()) lane_.open(bounds());
  }

  // A sync point ends the interval's ops (its flush comes next).
  void on_sync();
  // The sync's flush returned (or threw: `ok` false): the interval ends. `ran_graph`: the flush
  // had recorded work; `planned_hit`: a compiled plan of a region already cached ran it.
  void after_flush(bool ok, bool ran_graph, bool planned_hit);
  // Forgets what the measured half learned and predicted (tests).
  void reset_measured();

  // Leaves the tier and forgets the small intervals seen so far.
  void leave();

  bool eager() const { return eager_; }
  // Whether the interval's ops run eagerly so far (the fixed rule's or a measured choice).
  bool running_eagerly() const { return eager_ || measured_eager_; }
  // KILN_JIT_EAGER_TIER was switched off: the interval's ops are recorded from here on.
  void stop_running_eagerly() {
    if (running_eagerly()) {
      leave();
      measured_eager_ = false;
    }
  }

  // The clock intervals are timed with (the time-stamp counter's ticks; tests substitute their
  // own).
  using Clock = int64_t (*)();
  static void set_clock(Clock clock);

 private:
  // The fixed rule's, else the measured choice's: the ops and work its signature had.
  IntervalBounds bounds() const {
    return eager_ ? IntervalBounds{kSmallOps, kSmallWork}
                  : IntervalBounds{measured_.expected_ops(), measured_.expected_work()};
  }

  EagerLane& lane_;  // its count is the current interval's (ops, work, signature)
  int small_in_a_row_ = 0;
  bool eager_ = false;

  // The interval on_sync closed, timed by after_flush.
  struct Closed {
    uint64_t sig = 0;
    int64_t ops = 0, work = 0;
    bool small = false;
    MeasuredTier::Ran ran = MeasuredTier::Ran::Recorded;
  } closed_;
  int64_t start_ticks_ = -1;  // when the current interval began (-1: not timed)
  bool measured_eager_ = false;
  MeasuredTier measured_;
};

// Ops the eager tier ran eagerly, on all threads since the process started, counted at each
// thread's sync points (tests).
int64_t eager_tier_ops();

}  // namespace kiln::tracer
