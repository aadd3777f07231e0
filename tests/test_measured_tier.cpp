// The measured half of the eager tier (tracer/measured_tier.h), fed intervals directly: which
// intervals are timed, when the eager trial starts, which way wins, how long a choice holds,
// how a loop of several intervals between syncs is followed (small and untimed ones among
// them), and what a trial that cannot run whole eagerly does. The recorder's use of it (a real
// program with a substituted clock) is in test_eager_tier.cpp.
#include <gtest/gtest.h>

#include <string>

#include "tracer/measured_tier.h"

namespace kiln::measured_tier_test {

using tracer::MeasuredTier;
using Ran = MeasuredTier::Ran;

constexpr uint64_t kSig = 0x1234;
constexpr int64_t kOps = 40, kWork = 40 * 1024;

MeasuredTier::Interval interval(uint64_t sig, Ran ran, int64_t ticks, int64_t ops = kOps,
                                int64_t work = kWork, bool timed = true) {
  MeasuredTier::Interval it;
  it.sig = sig;
  it.ops = ops;
  it.work = work;
  it.ran = ran;
  it.timed = timed;
  it.planned_hit = ran == Ran::Recorded;
  it.ticks = ticks;
  return it;
}

// Recorded intervals (planned runs of a cached region) of `ticks` each until the entry asks for
// an eager run; how many it took (-1: none within `limit`).
int record_until_trial(MeasuredTier& m, uint64_t sig, int64_t ticks, int limit = 50) {
  for (int i = 1; i <= limit; ++i) {
    m.end_interval(interval(sig, Ran::Recorded, ticks));
    if (m.eager_next()) return i;
  }
  return -1;
}

// Runs the interval as the tier asks (eager_next) until a choice is made, recorded ones taking
// `recorded(i)` ticks and eager ones `eager(i)` (i counts each way's runs); the ways it ran.
template <class R, class E>
std::string measure(MeasuredTier& m, uint64_t sig, R recorded, E eager, int limit = 100) {
  std::string ways;
  int r = 0, e = 0;
  while (!m.choice_of(sig).has_value() && static_cast<int>(ways.size()) < limit) {
    const bool eager_run = m.eager_next();
    ways += eager_run ? 'E' : 'R';
    m.end_interval(eager_run ? interval(sig, Ran::Eagerly, eager(e++))
                             : interval(sig, Ran::Recorded, recorded(r++)));
  }
  return ways;
}

constexpr int kTrialAfter = MeasuredTier::kWarmRecorded + 1;

TEST(MeasuredTier, BothWaysAreTimedInTurnAndEagerKeptWhereFaster) {
  MeasuredTier m;
  // The first interval has no predecessor to predict it from; the second is the first repeat.
  EXPECT_EQ(record_until_trial(m, kSig, 1000), kTrialAfter);
  EXPECT_EQ(m.expected_ops(), kOps);
  EXPECT_EQ(m.expected_work(), kWork);
  // After the first timed recorded run: an untimed eager one, then eager and recorded in turn.
  const std::string ways = measure(
      m, kSig, [](int) { return 1000; }, [](int i) { return i == 0 ? 5000 : 600; });
  EXPECT_EQ(ways, "EERERERERE");
  EXPECT_EQ(m.choice_of(kSig), true);
  EXPECT_TRUE(m.eager_next());
  // The choice holds kHold intervals, then the entry measures again (recorded first).
  for (int i = 1; i < MeasuredTier::kHold; ++i) {
    m.end_interval(interval(kSig, Ran::Eagerly, 600));
    ASSERT_TRUE(m.eager_next()) << "held interval " << i;
  }
  m.end_interval(interval(kSig, Ran::Eagerly, 600));
  EXPECT_FALSE(m.choice_of(kSig).has_value());
  EXPECT_FALSE(m.eager_next()) << "measured again: recorded first";
  EXPECT_EQ(record_until_trial(m, kSig, 1000), kTrialAfter) << "warmed up again";
}

TEST(MeasuredTier, RecordingKeptWhereEagerIsNotFasterByTheMargin) {
  for (int64_t eager_ticks : {2000, 1000, 960}) {  // 960: within kMargin (0.95) of 1000
    MeasuredTier m;
    ASSERT_EQ(record_until_trial(m, kSig, 1000), kTrialAfter);
    (void)measure(
        m, kSig, [](int) { return 1000; }, [&](int) { return eager_ticks; });
    EXPECT_EQ(m.choice_of(kSig), false) << eager_ticks;
    EXPECT_FALSE(m.eager_next()) << eager_ticks;
  }
  MeasuredTier m;
  ASSERT_EQ(record_until_trial(m, kSig, 1000), kTrialAfter);
  (void)measure(
      m, kSig, [](int) { return 1000; }, [](int) { return 940; });
  EXPECT_EQ(m.choice_of(kSig), true) << "940 ticks is past the margin";
}

TEST(MeasuredTier, TheFastestRunOfEachWayIsCompared) {
  MeasuredTier m;
  ASSERT_EQ(record_until_trial(m, kSig, 9000), kTrialAfter);  // the first timed: 9000
  // Recorded: one fast run among slow ones; eager: steady in between.
  const int64_t recorded[] = {3000, 800, 3000, 9000, 9000};
  (void)measure(
      m, kSig, [&](int i) { return recorded[i % 5]; }, [](int) { return 1000; });
  EXPECT_EQ(m.choice_of(kSig), false) << "800 ticks recorded at best";
}

TEST(MeasuredTier, OnlyPlannedHitsWholeTimedRunsAndPositiveTimesCount) {
  MeasuredTier m;
  for (int i = 0; i < 20; ++i) {
    MeasuredTier::Interval interpreted = interval(kSig, Ran::Recorded, 1000);
    interpreted.planned_hit = false;  // interpreted, or a new region
    m.end_interval(interpreted);
    EXPECT_FALSE(m.eager_next()) << i;
    m.end_interval(interval(kSig, Ran::Both, 1000));  // left the tier midway
    EXPECT_FALSE(m.eager_next()) << i;
    m.end_interval(interval(kSig, Ran::Recorded, 1000, kOps, kWork, false));  // untimed
    EXPECT_FALSE(m.eager_next()) << i;
    m.end_interval(interval(kSig, Ran::Recorded, 0));  // a clock that went backwards
    EXPECT_FALSE(m.eager_next()) << i;
  }
  // An eager interval before the recorded runs were timed is no trial, and decides nothing.
  for (int i = 0; i < 5; ++i) m.end_interval(interval(kSig, Ran::Eagerly, 1));
  EXPECT_FALSE(m.choice_of(kSig).has_value());
  EXPECT_EQ(record_until_trial(m, kSig, 1000), kTrialAfter);
}

TEST(MeasuredTier, IntervalsPastEitherLimitAreNeverTimed) {
  for (auto [ops, work] : {std::pair<int64_t, int64_t>{MeasuredTier::kMaxOps + 1, 100},
                           {10, MeasuredTier::kMaxWork + 1},
                           {MeasuredTier::kMaxOps, MeasuredTier::kMaxWork}}) {
    MeasuredTier m;
    const bool within = ops <= MeasuredTier::kMaxOps && work <= MeasuredTier::kMaxWork;
    bool trial = false;
    for (int i = 0; i < 20 && !trial; ++i) {
      m.end_interval(interval(kSig, Ran::Recorded, 1000, ops, work));
      trial = m.eager_next();
    }
    EXPECT_EQ(trial, within) << ops << " ops, " << work << " elements";
  }
}

// A trial that cannot run whole eagerly (a higher-order op in it is always recorded, or the
// interval grew) settles on recording instead of trying forever.
TEST(MeasuredTier, ATrialThatRunsPartlyRecordedKeepsRecording) {
  MeasuredTier m;
  ASSERT_EQ(record_until_trial(m, kSig, 1000), kTrialAfter);
  m.end_interval(interval(kSig, Ran::Both, 700));  // its eager turn
  EXPECT_EQ(m.choice_of(kSig), false);
  EXPECT_FALSE(m.eager_next());
}

// forward + loss.item(), then backward + update + another sync: two signatures in turn, each
// predicted from the one before it; a small interval of the fixed rule (untimed) between them.
TEST(MeasuredTier, ALoopOfSeveralIntervalsIsFollowedRoundByRound) {
  MeasuredTier m;
  const uint64_t a = 1, b = 2, small = 3;
  const int64_t a_ops = 30, b_ops = 50;
  bool eager_a = false, eager_b = false;
  for (int round = 0; round < 30; ++round) {
    // a: recorded costs 1000, eager 300.
    m.end_interval(
        interval(a, eager_a ? Ran::Eagerly : Ran::Recorded, eager_a ? 300 : 1000, a_ops));
    EXPECT_FALSE(m.eager_next()) << "the small interval is the fixed rule's, round " << round;
    m.end_interval(interval(small, Ran::Eagerly, 50, 2, 32, false));
    eager_b = m.eager_next();
    if (eager_b) {
      EXPECT_EQ(m.expected_ops(), b_ops) << "round " << round;
    }
    // b: recorded costs 1000, eager 3000.
    m.end_interval(
        interval(b, eager_b ? Ran::Eagerly : Ran::Recorded, eager_b ? 3000 : 1000, b_ops));
    eager_a = m.eager_next();
    if (eager_a) {
      EXPECT_EQ(m.expected_ops(), a_ops) << "round " << round;
    }
  }
  EXPECT_EQ(m.choice_of(a), true);
  EXPECT_EQ(m.choice_of(b), false);
  EXPECT_TRUE(eager_a);
  EXPECT_FALSE(eager_b);
}

TEST(MeasuredTier, TheLeastRecentlySeenEntryIsReplaced) {
  MeasuredTier m;
  ASSERT_EQ(record_until_trial(m, 7, 1000), kTrialAfter);  // an entry made before kSig's
  ASSERT_EQ(record_until_trial(m, kSig, 1000), kTrialAfter);
  (void)measure(
      m, kSig, [](int) { return 1000; }, [](int) { return 100; });
  ASSERT_EQ(m.choice_of(kSig), true);
  ASSERT_FALSE(m.choice_of(7).has_value());
  // Six more signatures fill the table; kSig, seen after 7, outlives it.
  for (uint64_t s = 100; s < 100 + MeasuredTier::kEntries - 2; ++s)
    m.end_interval(interval(s, Ran::Recorded, 1000));
  m.end_interval(interval(999, Ran::Recorded, 1000));  // replaces 7, the least recently seen
  EXPECT_EQ(m.choice_of(kSig), true);
  m.end_interval(interval(998, Ran::Recorded, 1000));  // now kSig is the least recently seen
  EXPECT_FALSE(m.choice_of(kSig).has_value()) << "replaced in turn";
}

}  // namespace kiln::measured_tier_test
