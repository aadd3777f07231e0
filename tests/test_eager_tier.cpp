// The eager tier (tracer/eager_tier.h): with recording on, a thread that syncs after every few
// small ops runs them eagerly once four such intervals came in a row, records again as soon as
// an interval grows past 16 ops or 16384 elements of work, never runs an op eagerly while its
// segment holds pending work, and computes eager's bits throughout. RecordFuzz covers the tier
// over random programs (the KILN_JIT=0 pass runs the fuzzers with the tier on).
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hop_traced_util.h"
#include "kiln/kiln.h"
#include "record_util.h"
#include "runtime/dispatcher.h"
#include "tracer/eager_tier.h"
#include "tracer/recorder.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

// A named namespace: in a unity batch a using-directive at file scope would reach the other
// files' names (test_graph.cpp's TempDir against cuda_test_util.h's).
namespace kiln::eager_tier_test {

using namespace kiln::testing;
using tracer::EagerTier;

// Recording on with the tier on, whatever the environment says.
class EagerTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kiln::sync();
    config().jit = true;
    // What earlier tests timed on this thread (tracer/measured_tier.h) starts over.
    if (EagerTier* t = tracer::eager_tier_this_thread()) t->reset_measured();
  }

 public:
  // An interval past kSmallOps: whatever came before (earlier tests, making the inputs), the
  // thread is out of the tier and has seen no small interval.
  static void leave_tier() {
    Tensor x = ones({4});
    for (int64_t i = 0; i <= EagerTier::kSmallOps; ++i) x = x + 1.0;
    kiln::sync();
  }
  // kEnterAfter small intervals of `x * 1.5 + 1`: the thread is in the tier after them.
  static void enter_tier(const Tensor& x) {
    leave_tier();
    for (int i = 0; i < EagerTier::kEnterAfter; ++i) (void)(x * 1.5 + 1.0).to_vector<float>();
  }

 protected:
  JitRestore restore_;
  ConfigOverride<bool> tier_{config().jit_eager_tier, true};
  // The planner's own threshold, whatever KILN_JIT_THRESHOLD says (the measured tests count
  // intervals from the first planned run).
  ConfigOverride<int> threshold_{config().jit_threshold, -1};
};

Tensor eager_value(const std::function<Tensor()>& f) {
  JitMode off(false);
  return f();
}

TEST_F(EagerTierTest, SmallOpsBetweenFrequentSyncsRunEagerlyAfterFourIntervals) {
  Tensor x = ramp({16});
  const Tensor want = eager_value([&] { return x * 1.5 + 1.0; });
  leave_tier();
  for (int i = 0; i < 10; ++i) {
    const int64_t ops = tracer::eager_tier_ops();
    Tensor y = x * 1.5 + 1.0;
    const int64_t pending = tracer::pending_ops_this_thread();
    expect_bitwise_equal(y, want, "x * 1.5 + 1");  // a sync: the tier's count is published
    const bool tier = i >= EagerTier::kEnterAfter;
    EXPECT_EQ(pending, tier ? 0 : 2)
        << "interval " << i << (tier ? " runs eagerly" : " is recorded");
    EXPECT_EQ(tracer::eager_tier_ops(), ops + (tier ? 2 : 0)) << "interval " << i;
  }
}

TEST_F(EagerTierTest, AnIntervalPastTheOpLimitIsRecordedFromItsNextOp) {
  Tensor x = ramp({16});
  enter_tier(x);
  Tensor y = x;
  for (int64_t i = 0; i < EagerTier::kSmallOps; ++i) y = y * 1.25;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0) << "kSmallOps small ops run eagerly";
  y = y - 0.5;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "the next is recorded";
  y = y * 2.0;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 2);
  const Tensor want = eager_value([&] {
    Tensor v = x;
    for (int64_t i = 0; i < EagerTier::kSmallOps; ++i) v = v * 1.25;
    return (v - 0.5) * 2.0;
  });
  expect_bitwise_equal(y, want, "the chain");
  // Out of the tier again: the next small intervals are recorded until four came in a row.
  for (int i = 0; i < EagerTier::kEnterAfter; ++i) {
    Tensor z = x + 1.0;
    EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "interval " << i;
    (void)z.to_vector<float>();
  }
  Tensor z = x + 1.0;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0) << "back in the tier";
}

TEST_F(EagerTierTest, LargeTensorsAreRecordedAndLeaveTheTier) {
  Tensor x = ramp({16});
  Tensor big = ramp({EagerTier::kSmallWork + 1});
  const Tensor want_sum = eager_value([&] { return big.sum(); });
  enter_tier(x);
  Tensor y = big * 3.0;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "more than kSmallWork elements";
  (void)y.to_vector<float>();
  Tensor z = x * 3.0;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "the tier was left";
  // A reduction of a large tensor to one element counts its input's size.
  enter_tier(x);
  Tensor s = big.sum();
  EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "a large input";
  expect_bitwise_equal(s, want_sum, "sum");
}

std::pair<TensorList, TensorList> running_sums(const Tensor& x) {
  return scan(
      [](const TensorList& carry, const TensorList& xs) {
        Tensor c = carry[0] + xs[0];
        return std::pair<TensorList, TensorList>{{c}, {c * 2.0}};
      },
      {zeros({3})}, {x});
}

TEST_F(EagerTierTest, OpsAfterARecordedHigherOrderOpStayRecordedUntilTheFlush) {
  Tensor x = ramp({2, 3});
  enter_tier(x);
  auto [carry, ys] = running_sums(x);
  const int64_t after_scan = tracer::pending_ops_this_thread();
  ASSERT_GT(after_scan, 0) << "the scan is a recorded node";
  Tensor z = carry[0] + 1.0;
  EXPECT_EQ(tracer::pending_ops_this_thread(), after_scan + 1) << "recorded behind the scan";
  const Tensor want = eager_value([&] { return running_sums(x).first[0] + 1.0; });
  expect_bitwise_equal(z, want, "scan carry + 1");
}

// Ops in the tier run through the dispatcher's eager lane (runtime/eager_lane.h) without the
// recorder's call; the switches still take effect at the very next op.
TEST_F(EagerTierTest, SwitchesTurnedOffInTheMiddleOfAnIntervalActAtTheNextOp) {
  Tensor x = ramp({16});
  enter_tier(x);
  Tensor y = x * 1.5;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0) << "in the tier";
  {
    ConfigOverride<bool> no_tier{config().jit_eager_tier, false};
    y = y + 1.0;
    EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "the tier switched off: recorded";
  }
  expect_bitwise_equal(y, eager_value([&] { return x * 1.5 + 1.0; }), "x * 1.5 + 1");

  enter_tier(x);
  y = x * 1.5;
  ASSERT_NE(current_mode(), nullptr) << "the recorder is this thread's mode";
  {
    JitMode off(false);
    y = y + 1.0;
    EXPECT_EQ(current_mode(), nullptr) << "recording switched off: the thread is in eager mode";
  }
  expect_bitwise_equal(y, eager_value([&] { return x * 1.5 + 1.0; }), "x * 1.5 + 1 (off)");
}

// The lane remembers its ops' output metadata by their place in the interval
// (runtime/lane_meta_memo.h): a repeating interval's ops skip their meta functions, and an op
// whose input changed shape at the same place asks its meta function again, errors included.
TEST_F(EagerTierTest, TheLaneSkipsMetaFunctionsOnlyWhileTheInputsKeepTheirMetadata) {
  const Tensor x = ramp({16}), b16 = ramp({16}, 2.0), b4x16 = ramp({4, 16}, 3.0),
               b2x16 = ramp({2, 16}, 4.0), b5 = ramp({5});
  enter_tier(x);
  ASSERT_NE(current_mode(), nullptr) << "the recorder is this thread's mode";
  const LaneMetaMemo& memo = current_mode()->eager_lane.meta_memo();
  auto interval = [&](const Tensor& b) {
    Tensor y = (x + b) * 0.5;
    (void)y.sum().item<float>();
    return y;
  };
  auto want = [&](const Tensor& b) { return eager_value([&] { return (x + b) * 0.5; }); };
  for (int i = 0; i < 2; ++i) (void)interval(b16);
  int64_t answered = memo.answered();
  const Tensor y16 = interval(b16);
  EXPECT_EQ(memo.answered() - answered, 3) << "add, mul and sum: remembered from the last interval";
  expect_bitwise_equal(y16, want(b16), "(x + b) * 0.5");
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0) << "run eagerly";

  answered = memo.answered();
  const Tensor y = interval(b4x16);
  EXPECT_EQ(memo.answered(), answered) << "b broadcasts now: every op asks its meta function";
  EXPECT_EQ(y.sizes(), std::vector<int64_t>({4, 16}));
  expect_bitwise_equal(y, want(b4x16), "(x + b) * 0.5, b of [4, 16]");
  const Tensor y2 = interval(b2x16);  // the same strides as [4, 16]
  EXPECT_EQ(y2.sizes(), std::vector<int64_t>({2, 16}));
  expect_bitwise_equal(y2, want(b2x16), "(x + b) * 0.5, b of [2, 16]");

  std::string recorded_error, eager_error;
  try {
    (void)interval(b5);
  } catch (const Error& e) {
    recorded_error = e.what();
  }
  try {
    JitMode off(false);
    (void)(x + b5);
  } catch (const Error& e) {
    eager_error = e.what();
  }
  EXPECT_NE(recorded_error, "") << "[16] + [5] raises";
  EXPECT_EQ(recorded_error, eager_error);

  for (int i = 0; i < 2; ++i) expect_bitwise_equal(interval(b16), want(b16), "b of [16] again");
  EXPECT_GT(memo.answered(), answered) << "the repeating interval is answered again";
}

// Two intervals that alternate (a step, then an update) start at the same op index: the
// interval before each is part of its ops' places, so neither evicts the other's entries.
TEST_F(EagerTierTest, TheLaneRemembersTwoAlternatingIntervalsApart) {
  const Tensor x = ramp({16}), b = ramp({16}, 2.0);
  enter_tier(x);
  ASSERT_NE(current_mode(), nullptr) << "the recorder is this thread's mode";
  const LaneMetaMemo& memo = current_mode()->eager_lane.meta_memo();
  auto step = [&] { return ((x + b) * 0.5).sum().item<float>(); };
  auto update = [&] { return (x * 2.0 - b).abs().amax().item<float>(); };
  for (int i = 0; i < 3; ++i) (void)(step() + update());
  const int64_t answered = memo.answered();
  const float s = step(), u = update();
  EXPECT_EQ(memo.answered() - answered, 7) << "add, mul, sum; mul, sub, abs, amax";
  EXPECT_EQ(s, eager_value([&] { return ((x + b) * 0.5).sum(); }).to_vector<float>()[0]);
  EXPECT_EQ(u, eager_value([&] { return (x * 2.0 - b).abs().amax(); }).to_vector<float>()[0]);
}

TEST_F(EagerTierTest, KernelErrorsSurfaceAtTheOpAsInEagerMode) {
  Tensor x = ramp({3, 4});
  enter_tier(x);
  const Tensor index = from_vector<int64_t>({0, 9}, {1, 2});
  EXPECT_THROW((void)gather(x, 1, index), Error) << "raised by the op, not at the next sync";
  EXPECT_NO_THROW(kiln::sync());
  EXPECT_EQ((x * 2.0).to_vector<float>()[1], 1.5f);
}

TEST_F(EagerTierTest, AnInPlaceWriteRunsAfterAnotherThreadsPendingRead) {
  Tensor a = ramp({8});
  const Tensor want = eager_value([&] { return a * 2.0; });
  std::promise<void> recorded, written;
  std::future<void> written_f = written.get_future();
  Tensor doubled;
  std::thread reader([&] {
    config().jit = true;  // this thread records (it starts outside the tier)
    doubled = a * 2.0;    // a pending read of a
    recorded.set_value();
    written_f.wait();
    kiln::sync();
  });
  recorded.get_future().wait();
  enter_tier(a);
  a.add_(100.0);  // eager in the tier: the reader's pending work must run first
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0);
  written.set_value();
  reader.join();
  expect_bitwise_equal(doubled, want, "the reader saw the old contents");
  EXPECT_EQ(a.to_vector<float>()[0], 100.5f);
}

TEST_F(EagerTierTest, GradientsAccumulateAsInEagerMode) {
  auto run = [](std::vector<float>& seen) {
    manual_seed(5);
    Tensor w = (randn({4}) * 0.5).requires_grad_();
    Tensor x = randn({4});
    for (int step = 0; step < 10; ++step) {
      Tensor loss = (w * x).sum();
      loss.backward();  // accumulates into w.grad() step after step
      seen.push_back(loss.item<float>());
      for (float g : w.grad().to_vector<float>()) seen.push_back(g);
    }
  };
  std::vector<float> want, got;
  {
    JitMode off(false);
    run(want);
  }
  const int64_t ops = tracer::eager_tier_ops();
  run(got);
  EXPECT_EQ(got, want);
  EXPECT_GT(tracer::eager_tier_ops(), ops) << "small steps: the tier ran some of their ops";
}

TEST_F(EagerTierTest, OffRecordsEveryOp) {
  ConfigOverride<bool> off{config().jit_eager_tier, false};
  Tensor x = ramp({16});
  leave_tier();
  const int64_t ops = tracer::eager_tier_ops();
  for (int i = 0; i < 2 * EagerTier::kEnterAfter; ++i) {
    Tensor y = x * 1.5 + 1.0;
    EXPECT_EQ(tracer::pending_ops_this_thread(), 2) << "interval " << i;
    (void)y.to_vector<float>();
  }
  EXPECT_EQ(tracer::eager_tier_ops(), ops);
}

// The measured half (tracer/measured_tier.h) through the recorder: intervals of `ops` muls
// (past the fixed rule's 16) repeat; a substituted clock makes each recorded interval take
// `recorded_ticks` and each eager one `eager_ticks`. Returns, per interval, whether its ops ran
// eagerly, and checks every result against eager mode's bits. The clock is restored on return.
class FakeClock {
 public:
  FakeClock() {
    EagerTier::set_clock([] { return now; });
  }
  ~FakeClock() { EagerTier::set_clock(nullptr); }
  static inline int64_t now = 1;
};

Tensor chain(const Tensor& x, int64_t ops) {
  Tensor y = x;
  for (int64_t k = 0; k < ops; ++k) y = y * 1.01;
  return y;
}

std::vector<bool> timed_intervals(const Tensor& x, int64_t recorded_ticks, int64_t eager_ticks,
                                  int intervals, int64_t ops = 20) {
  EagerTierTest::leave_tier();  // out of the fixed rule's tier (an earlier test may have left it
                                // on)
  if (EagerTier* t = tracer::eager_tier_this_thread()) t->reset_measured();
  FakeClock clock;
  tracer::RegionCache::instance().clear();  // the first interval records a new region
  const Tensor want = eager_value([&] { return chain(x, ops); });
  std::vector<bool> eager;
  for (int i = 0; i < intervals; ++i) {
    Tensor y = chain(x, ops);
    const int64_t pending = tracer::pending_ops_this_thread();
    EXPECT_TRUE(pending == 0 || pending == ops) << "interval " << i << ": " << pending;
    eager.push_back(pending == 0);
    FakeClock::now += pending == 0 ? eager_ticks : recorded_ticks;
    expect_bitwise_equal(y, want, "the chain");  // the sync
    tracer::wait_for_compiles();  // from the second interval on, each flush runs the plan
  }
  return eager;
}

// Which intervals of timed_intervals run eagerly while the tier measures: the thread's first
// interval and the new region's first run are not timed recorded runs; kWarmRecorded untimed
// and one timed recorded run later, an untimed eager one, then eager and recorded in turn.
constexpr int kFirstEager = 1 + tracer::MeasuredTier::kWarmRecorded + 1;
constexpr int kDecided =
    kFirstEager + tracer::MeasuredTier::kWarmEager + 2 * tracer::MeasuredTier::kSamples - 1;
bool eager_while_measuring(int i) {
  return i >= kFirstEager && i < kDecided &&
         (i < kFirstEager + tracer::MeasuredTier::kWarmEager + 1 || (i - kFirstEager) % 2 == 1);
}

// Recorded runs of a cached region's plan are timed first, then eager ones, and the faster way
// is kept.
TEST_F(EagerTierTest, IntervalsMeasuredFasterEagerlyRunEagerly) {
  const Tensor x = ramp({64});
  leave_tier();
  const int64_t ops = tracer::eager_tier_ops();
  const std::vector<bool> eager = timed_intervals(x, 1000, 300, kDecided + 10);
  int64_t eager_intervals = 0;
  for (int i = 0; i < static_cast<int>(eager.size()); ++i) {
    EXPECT_EQ(eager[i], i >= kDecided || eager_while_measuring(i)) << "interval " << i;
    eager_intervals += eager[i];
  }
  EXPECT_EQ(tracer::eager_tier_ops() - ops, 20 * eager_intervals);
  EXPECT_GE(eager_intervals, 10 + tracer::MeasuredTier::kSamples);
}

TEST_F(EagerTierTest, IntervalsMeasuredFasterRecordedStayRecorded) {
  const std::vector<bool> eager = timed_intervals(ramp({64}), 300, 1000, kDecided + 10);
  for (int i = 0; i < static_cast<int>(eager.size()); ++i)
    EXPECT_EQ(eager[i], eager_while_measuring(i)) << "interval " << i;
}

// An interval chosen to run eagerly that turns out longer (in ops, or in work) is recorded from
// its first op past the one timed.
TEST_F(EagerTierTest, AMeasuredEagerIntervalThatGrowsIsRecordedFromThere) {
  const Tensor x = ramp({64});
  (void)timed_intervals(x, 1000, 300, kDecided + 2);
  Tensor y = chain(x, 20);
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0) << "the timed interval runs eagerly";
  y = y + 1.0;
  EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "its 21st op is recorded";
  expect_bitwise_equal(y, eager_value([&] { return chain(x, 20) + 1.0; }), "the longer chain");

  const Tensor big = ramp({4096});
  kiln::sync();
  (void)timed_intervals(x, 1000, 300, kDecided + 2);
  Tensor w = chain(x, 10);
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0);
  const Tensor t = big.sum();  // the 11th op reads 4096 elements: past the interval's 20 x 64
  EXPECT_EQ(tracer::pending_ops_this_thread(), 1) << "past the timed work";
  w = w * t;
  expect_bitwise_equal(w, eager_value([&] { return chain(x, 10) * big.sum(); }), "the sum");
}

// A higher-order op in an interval running eagerly is recorded (it always is), and so is every
// op after it until the flush: the segment holds pending work.
// An op after a recorded higher-order op is turned away by the lane (pending work) after the
// memo answered its metadata: the recorder gets the remembered metadata.
TEST_F(EagerTierTest, AnOpTheLaneTurnsAwayGetsTheMetadataTheMemoAnswered) {
  const Tensor x = ramp({2, 3}), s = ramp({2, 3}, 1.0);
  enter_tier(x);
  ASSERT_NE(current_mode(), nullptr) << "the recorder is this thread's mode";
  const LaneMetaMemo& memo = current_mode()->eager_lane.meta_memo();
  auto interval = [&] {
    Tensor y = x * 1.5;                  // run by the lane
    auto [carry, ys] = running_sums(s);  // recorded: pending work
    Tensor v = x + 2.0;                  // answered by the memo, then recorded
    return (y + v).sum() + carry[0].sum();
  };
  const float want = eager_value(interval).to_vector<float>()[0];
  for (int i = 0; i < 3; ++i) EXPECT_EQ(interval().item<float>(), want) << "interval " << i;
  const int64_t answered = memo.answered();
  Tensor r = interval();
  EXPECT_GE(memo.answered() - answered, 2) << "x * 1.5 and x + 2.0";
  EXPECT_EQ(r.item<float>(), want);
}

// A view's metadata holds its input's offset: views never come from the memo, so the same
// transpose of rows at other offsets reads each row.
TEST_F(EagerTierTest, TheLaneNeverTakesAViewsMetadataFromTheMemo) {
  const Tensor base = ramp({4, 3, 3});
  enter_tier(base);
  for (int i = 0; i < 8; ++i) {
    const float got = (base.select(0, i % 4).t() * 2.0).sum({1}).amax().item<float>();
    const Tensor want =
        eager_value([&] { return (base.select(0, i % 4).t() * 2.0).sum({1}).amax(); });
    EXPECT_EQ(got, want.to_vector<float>()[0]) << "row " << i % 4;
  }
}

TEST_F(EagerTierTest, AHigherOrderOpInAMeasuredEagerIntervalKeepsTheRestRecorded) {
  const Tensor x = ramp({64});
  (void)timed_intervals(x, 1000, 300, kDecided + 2);
  const Tensor s = ramp({2, 3});
  kiln::sync();
  (void)timed_intervals(x, 1000, 300, kDecided + 2);
  Tensor y = chain(x, 5);
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0);
  auto [carry, ys] = running_sums(s);
  const int64_t after_scan = tracer::pending_ops_this_thread();
  ASSERT_GT(after_scan, 0) << "the scan is a recorded node";
  y = y * carry[0].sum();
  EXPECT_GT(tracer::pending_ops_this_thread(), after_scan) << "recorded behind the scan";
  expect_bitwise_equal(y, eager_value([&] { return chain(x, 5) * running_sums(s).first[0].sum(); }),
                       "chain * scan carry");
}

}  // namespace kiln::eager_tier_test
