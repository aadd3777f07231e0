// The eager lane: a stretch of ops that a mode hands back to eager execution without being
// called for each of them (the recorder's eager tier, tracer/eager_tier.h).
//
// Why: a thread whose program syncs after every few small ops runs them eagerly (the tier), and
// each such op still went through the mode's virtual calls, the configuration and the tier's
// decision: ~127 instructions an op on top of eager's (kiln-perf host_loop ran 8% more
// instructions in jit mode than in eager mode, all of it that bookkeeping).
//
// How: the mode opens its lane with bounds (ops, elements of work) once it decided that the
// interval runs eagerly. While open, the dispatcher runs each CPU op eagerly itself, as eager
// mode does, as long as the interval's counts stay within the bounds and recording and the tier
// are still switched on; it counts the op here exactly as the tier would (IntervalCount::add).
// The first op past a bound (or any other op: in-place, on a device) goes to the mode, which
// closes the lane and decides again. The lane also turns every op away once the mode holds
// pending work (a higher-order op is always recorded), and the mode closes it wherever its
// decision could change: a sync point, its tier left or reset. Not thread-safe: one thread's
// mode owns its lane.
//
// The lane also remembers its ops' output metadata by position in the interval, so that the ops
// of a repeating interval skip their meta functions (runtime/lane_meta_memo.h).
#pragma once
#include <atomic>
#include <cstdint>
#include <utility>

#include "runtime/config.h"
#include "runtime/lane_meta_memo.h"
#include "runtime/op_list.h"

namespace kiln {

// How far an interval that runs eagerly may go: ops, and their summed work.
struct IntervalBounds {
  int64_t ops = 0, work = 0;
};

// What the ops of one interval between sync points add up to (the eager tier's counts).
struct IntervalCount {
  int64_t ops = 0;           // ops dispatched
  int64_t work = 0;          // per op, the element count of the largest tensor it reads or writes
  uint64_t sig = 0;          // a multiplicative hash of the (op, work) words in order (FNV's prime)
  bool ran_eagerly = false;  // an op of the interval ran eagerly
  bool recorded = false;     // an op of the interval was recorded
  int64_t eager_ops = 0;     // ops run eagerly, not yet published (eager_tier_ops())

  uint64_t before = 0;  // the signature of the interval before this one (EagerTier::on_sync)

  // Whether one more op of `w` elements keeps the interval within `b`.
  bool fits(int64_t w, const IntervalBounds& b) const { return ops < b.ops && work + w <= b.work; }

  // Where the next op stands: a hash of the ops before it in the interval and of the interval
  // before (LaneMetaMemo's key).
  uint64_t place() const {
    return (sig ^ static_cast<uint64_t>(ops) ^ before * 0xff51afd7ed558ccdull) *
           0x9e3779b97f4a7c15ull;
  }
  void add(OpId op, int64_t w) {
    ++ops;
    work += w;
    sig = (sig ^ (static_cast<uint64_t>(op) << 48 ^ static_cast<uint64_t>(w))) * 0x100000001b3ull;
  }
  void add_eager(OpId op, int64_t w) {
    add(op, w);
    ran_eagerly = true;
    ++eager_ops;
  }
};

class EagerLane {
 public:
  IntervalCount count;  // the current interval's, whoever ran its ops

  // The configuration whose switches the lane obeys (config()), and the mode's flag for work
  // it holds pending (the recorder's segment: set by anything recorded, a higher-order op
  // included): the lane runs no op eagerly past pending work. Set once by the mode.
  void bind(const Config& cfg, const std::atomic<bool>& pending) {
    cfg_ = &cfg;
    pending_ = &pending;
  }
  // Ops run through the lane while the interval stays within `bounds`.
  void open(const IntervalBounds& bounds) {
    open_ = cfg_ != nullptr;
    bounds_ = bounds;
  }
  // True when it was open.
  bool close() { return std::exchange(open_, false); }
  bool is_open() const { return open_; }

  // The output metadata of the interval's next op (not a view) where the lane's memo knows it:
  // the dispatcher then skips the meta function (runtime/lane_meta_memo.h).
  // Null where it does not; valid until the next remember_meta().
  const OutputMeta* known_meta(const OpCall& call) const { return memo_.find(count.place(), call); }
  // Remembers what the meta function gave for the interval's next op (not a view).
  void remember_meta(const OpCall& call, const OutputMeta& meta) {
    memo_.remember(count.place(), call, meta);
  }
  const LaneMetaMemo& meta_memo() const { return memo_; }

  // Whether a CPU op of `work` elements runs eagerly through the lane; counts it if so.
  bool take(OpId op, int64_t work) {
    if (!open_ || !cfg_->jit || !cfg_->jit_eager_tier || !count.fits(work, bounds_) ||
        pending_->load(std::memory_order_relaxed))
      return false;
    count.add_eager(op, work);
    return true;
  }

 private:
  bool open_ = false;
  const Config* cfg_ = nullptr;
  const std::atomic<bool>* pending_ = nullptr;
  IntervalBounds bounds_;
  LaneMetaMemo memo_;
};

}  // namespace kiln
