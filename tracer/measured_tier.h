// The measured half of the eager tier (tracer/eager_tier.h): intervals between sync points too
// large for its fixed rule but small enough that recording's fixed costs can outweigh what
// fusion saves are timed both ways, and the faster way is kept.
//
// Why: a recorded op costs about what an eager op's dispatch costs, and a flush adds the plan's
// bookkeeping per step; fusion pays that back only where the fused work is large enough. A
// plain C++ loop of 16 RNN cells on a batch of 16 x 64 (kiln-perf rnn_loop at --size small: two
// small GEMMs, a bias and a tanh per cell, one sync per run) ran 0.84-0.88x eager recorded on
// the 2-core AMD EPYC VM; a chain of 1000 adds on 16 floats (`dispatch`) runs faster recorded.
// No fixed rule tells them apart, so the recorder measures.
//
// How: each interval has a signature (its dispatched ops' ids and work, in order), and the
// tier keeps an entry per signature (up to kEntries, least recently seen replaced) with the
// signature that followed it last, so a loop of several intervals between syncs (forward and
// loss.item(), then the update and another sync; small ones of the fixed rule among them) is
// followed round by round. An entry times recorded intervals whose flush ran a compiled plan of
// a region already cached (after kWarmRecorded untimed: planning and first touches) and
// intervals run eagerly (after kWarmEager untimed) in turn, kSamples of each: taken in turn,
// both ways see the same phases of a noisy machine (three recorded then three eager made
// `rnn_loop`'s choice flip between runs). It keeps eager where its fastest run beat
// recording's fastest by kMargin. The choice holds for kHold
// intervals, then the entry measures again. An interval that runs eagerly is recorded from the
// op that takes it past the ops or work the entry expects (a different interval after all), as
// in the fixed rule, and a trial that could not run whole eagerly (a higher-order op, which is
// always recorded, or a longer interval) settles on recording. Intervals past kMaxOps ops or
// kMaxWork elements are never timed: fusion wins there, and an eager trial would be long.
// Regions that never get a plan (KILN_JIT=1 without a planner: kiln-perf's interp mode) are
// never timed recorded, so they stay recorded.
//
// Timing noise: the minimum of each way's runs is compared, eager must win by 5% (kMargin), and
// a wrong choice costs the difference for kHold intervals at most. (Three recorded runs, then
// three eager ones, with a margin of 3% sometimes sent `dispatch`, 10% faster recorded, eager
// on the 2-core VM; with 10%, `rnn_loop`, about 10% faster eagerly, stayed recorded as often.)
// Results are the same either way (the numerical contract of the fixed rule). Not thread-safe: each
// recorder's thread uses its own.
#pragma once
#include <array>
#include <cstdint>
#include <optional>

namespace kiln::tracer {

class MeasuredTier {
 public:
  static constexpr int64_t kMaxOps = 4096;
  static constexpr int64_t kMaxWork = int64_t{1} << 20;
  static constexpr int kWarmRecorded = 2;
  static constexpr int kWarmEager = 1;
  static constexpr int kSamples = 5;
  static constexpr int kHold = 512;
  static constexpr double kMargin = 0.95;
  static constexpr int kEntries = 8;

  // How an interval ran: every op recorded, every op eagerly (nothing left to flush), or both.
  enum class Ran : uint8_t { Recorded, Eagerly, Both };

  // One interval that ended (every interval with an op, so that the next one is predicted from
  // it). `timed`: `ticks` is its time on the tier's clock (its ops and its flush); false for
  // the fixed rule's small intervals, a thread's first interval and a flush that threw.
  // `planned_hit`: its flush ran a compiled plan of a region already cached.
  struct Interval {
    uint64_t sig = 0;
    int64_t ops = 0, work = 0;
    Ran ran = Ran::Recorded;
    bool timed = false;
    bool planned_hit = false;
    int64_t ticks = 0;
  };
  void end_interval(const Interval& it);
  // Whether the interval that follows the one that just ended should run eagerly; then
  // expected_ops() / expected_work() bound it.
  bool eager_next() const;
  int64_t expected_ops() const { return expect_ops_; }
  int64_t expected_work() const { return expect_work_; }
  // Forgets every entry.
  void clear();

  // For tests: the choice made for a signature (none yet: nullopt; true: eagerly).
  std::optional<bool> choice_of(uint64_t sig) const;

 private:
  enum class Choice : uint8_t { Undecided, Recorded, Eagerly };
  struct Entry {
    uint64_t sig = 0;
    uint64_t next = 0;  // the signature that followed it last
    bool used = false;
    bool has_next = false;
    bool timeable = false;  // within kMaxOps and kMaxWork, not the fixed rule's
    int64_t ops = 0, work = 0;
    uint64_t seen = 0;  // the tier's interval count when last seen (replacement)
    int warm_recorded = 0, warm_eager = 0;
    int recorded_n = 0, eager_n = 0;
    int64_t recorded_min = INT64_MAX, eager_min = INT64_MAX;
    Choice choice = Choice::Undecided;
    int hold = 0;
    // Timing both ways in turn (after the recorded warm-up and a first timed recorded run).
    bool measuring() const { return choice == Choice::Undecided && recorded_n > 0; }
    // Whether the next run is an eager one: eager's count trails recording's.
    bool eager_turn() const { return measuring() && eager_n < recorded_n; }
    void restart() {  // measure again
      warm_recorded = warm_eager = recorded_n = eager_n = 0;
      recorded_min = eager_min = INT64_MAX;
      choice = Choice::Undecided;
    }
    void decide(Choice c) {
      choice = c;
      hold = kHold;
    }
  };
  Entry* find(uint64_t sig);
  const Entry* find(uint64_t sig) const;
  Entry& find_or_add(uint64_t sig);
  void sample(Entry& e, const Interval& it);

  std::array<Entry, kEntries> entries_{};
  Entry* last_ = nullptr;  // the entry of the interval that just ended
  uint64_t intervals_ = 0;
  mutable int64_t expect_ops_ = 0, expect_work_ = 0;
};

}  // namespace kiln::tracer
