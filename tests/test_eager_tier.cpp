// The eager tier (tracer/eager_tier.h): with recording on, a thread that syncs after every few
// small ops runs them eagerly once four such intervals came in a row, records again as soon as
// an interval grows past 16 ops or 16384 elements of work, never runs an op eagerly while its
// segment holds pending work, and computes eager's bits throughout. RecordFuzz covers the tier
// over random programs (the KILN_JIT=0 pass runs the fuzzers with the tier on).
#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <utility>
#include <vector>

#include "hop_traced_util.h"
#include "kiln/kiln.h"
#include "record_util.h"
#include "tracer/eager_tier.h"
#include "tracer/recorder.h"

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
  }
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
  JitRestore restore_;
  ConfigOverride<bool> tier_{config().jit_eager_tier, true};
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

}  // namespace kiln::eager_tier_test
