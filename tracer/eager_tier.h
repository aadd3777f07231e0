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
// Eager execution is what KILN_JIT=0 does, and JIT kernels give eager's bits within the
// numerical contract, so the tier changes no result, only where an error surfaces (at the op,
// as in eager mode, instead of at the sync). KILN_JIT_EAGER_TIER=0 (config().jit_eager_tier)
// records every op. Not thread-safe: each recorder's own thread uses its tier.
#pragma once
#include <cstdint>

namespace kiln::tracer {

class EagerTier {
 public:
  // Near the break-even measured on the 2-core Intel VM (docs/performance.md, 2026-11-29): 8
  // chained ops of 1024 floats and a sync ran 6.6 µs eagerly, 7.4 recorded; 16 of them 11.5 and
  // 12.9; 8 ops of 4096 floats 10.6 eagerly, 8.7 recorded (fused).
  static constexpr int64_t kSmallOps = 16;
  static constexpr int64_t kSmallWork = 16384;
  static constexpr int kEnterAfter = 4;

  // Counts an op of `work` elements into the current interval; true when it should run
  // eagerly. `segment_empty` is asked only while in the tier (it takes the segment's lock).
  template <class SegmentEmpty>
  bool run_eagerly(int64_t work, SegmentEmpty&& segment_empty) {
    ++ops_;
    work_ += work;
    if (!eager_) return false;
    if (ops_ > kSmallOps || work_ > kSmallWork) {
      leave();
      return false;
    }
    if (!segment_empty()) return false;
    ++ran_eagerly_;
    return true;
  }

  // A sync point ends the interval.
  void on_sync();

  // Leaves the tier and forgets the small intervals seen so far.
  void leave();

  bool eager() const { return eager_; }

 private:
  int64_t ops_ = 0;   // ops dispatched in the current interval
  int64_t work_ = 0;  // their work
  int small_in_a_row_ = 0;
  bool eager_ = false;
  int64_t ran_eagerly_ = 0;  // added to eager_tier_ops() at the next sync (one atomic add)
};

// Ops the eager tier ran eagerly, on all threads since the process started, counted at each
// thread's sync points (tests).
int64_t eager_tier_ops();

}  // namespace kiln::tracer
