// The CPU JIT's one_hot as a compare in its readers' kernel (jit/passes/one_hot_compare.h):
// eager's bits for a hand-written NLL through one_hot and for one_hot itself as a result (batch
// dims, one class), no one_hot step left in the plan, one_hot's error for a class out of range,
// and one plan for targets of two lengths.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "jit_recorded_util.h"

namespace kiln {
namespace {

using testing::expect_error;
using testing::JitMode;
using JitOneHotCompareTest = testing::JitRecordedTest<>;

TEST_F(JitOneHotCompareTest, NllThroughOneHotIsOneKernelBitwise) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t classes : {1, 17, 1000}) {
      const std::string what = fmt::format("{} C={}", dtype_name(dt), classes);
      const Tensor x = testing::eager_normal({37, classes}, 700 + classes, dt);
      const Tensor t = testing::eager_randint({37}, classes, 701 + classes);
      tracer::RegionCache::instance().clear();
      testing::expect_iterations_match(
          [&](int) {
            return TensorList{
                -(one_hot(t, classes).to(dt) * log_softmax(x * 1.5, -1)).sum({-1}).mean()};
          },
          2, what);
      const std::vector<OpId> ops = testing::plan_eager_ops();
      EXPECT_FALSE(testing::contains_op(ops, OpId::OneHot)) << what;
      EXPECT_TRUE(testing::contains_op(ops, OpId::OneHotClass)) << what;
    }
  }
}

TEST_F(JitOneHotCompareTest, OneHotAsAResultGivesEagerBits) {
  const Tensor t = testing::eager_randint({2, 3, 5}, 11, 710);
  testing::expect_iterations_match(
      [&](int) {
        return TensorList{one_hot(t, 11), one_hot(t, 13) * 3};
      },
      2, "batched");
  EXPECT_TRUE(testing::contains_op(testing::plan_eager_ops(), OpId::OneHotClass));
}

TEST_F(JitOneHotCompareTest, AClassOutOfRangeRaisesOneHotsError) {
  Tensor bad;
  {
    JitMode off(false);
    bad = testing::eager_randint({8}, 5, 720);
    bad.narrow(0, 6, 1).fill_(-2);
  }
  const Tensor good = testing::eager_randint({8}, 5, 721);
  auto program = [](const Tensor& t) { return (one_hot(t, 5) * 2).sum().item<int64_t>(); };
  for (bool jit : {false, true}) {
    JitMode mode(jit);
    tracer::RegionCache::instance().clear();
    program(good);  // with the JIT: the plan, which the bad targets then run
    expect_error([&] { program(bad); }, "one_hot",
                 "class value -2 is out of range for num_classes 5");
  }
  EXPECT_TRUE(testing::contains_op(testing::plan_eager_ops(), OpId::OneHotClass));
}

TEST_F(JitOneHotCompareTest, OnePlanRunsTargetsOfTwoLengths) {
  const Tensor a = testing::eager_randint({9}, 6, 730), b = testing::eager_randint({4}, 6, 731);
  testing::expect_iterations_match(
      [&](int it) { return TensorList{(one_hot(it == 0 ? a : b, 6) * 2).sum({0})}; }, 2,
      "two lengths");
  EXPECT_EQ(tracer::RegionCache::instance().regions().size(), 1u);
  EXPECT_TRUE(testing::contains_op(testing::plan_eager_ops(), OpId::OneHotClass));
}

// Random index shapes (rank 0 to 3, empty ones included) and class counts, the result read
// as a float mask and summed over the classes: eager's bits, one_hot gone from the plan.
TEST_F(JitOneHotCompareTest, RandomShapesGiveEagerBits) {
  std::mt19937 rng(740);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 30; ++round) {
    std::vector<int64_t> shape;
    for (int64_t d = 0, rank = pick(0, 3); d < rank; ++d) shape.push_back(pick(0, 7));
    const int64_t classes = pick(1, 70);
    const std::string what =
        fmt::format("round {}: index {} classes {}", round, fmt::join(shape, "x"), classes);
    const Tensor t = testing::eager_randint(shape, classes, 741 + static_cast<uint64_t>(round));
    const Tensor w = testing::eager_normal({classes}, 742);
    tracer::RegionCache::instance().clear();
    testing::expect_iterations_match(
        [&](int) {
          const Tensor h = one_hot(t, classes);
          return TensorList{(h.to(kFloat32) * w).sum({-1}), h + 1};
        },
        2, what);
    const std::vector<OpId> ops = testing::plan_eager_ops();
    EXPECT_FALSE(testing::contains_op(ops, OpId::OneHot)) << what;
    EXPECT_TRUE(testing::contains_op(ops, OpId::OneHotClass)) << what;
  }
}

}  // namespace
}  // namespace kiln
