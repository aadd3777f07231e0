// The eager lane's memo of output metadata (runtime/lane_meta_memo.h): it answers only for a
// call with the remembered op, attributes (scalars bit for bit) and inputs' sizes, strides,
// dtypes and devices, at the same place of an interval; anything else is asked of the meta
// function again. The lane's use of it is tested in test_eager_tier.cpp.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"
#include "runtime/dispatcher.h"
#include "runtime/lane_meta_memo.h"

namespace kiln::lane_meta_memo_test {

constexpr uint64_t kPlace = 0x1234567890abcdefull;

OutputMeta meta_of(std::vector<int64_t> sizes, DType dtype = DType::Float32) {
  OutputMeta m;
  m.sizes = DimVector(sizes.begin(), sizes.end());
  m.dtype = dtype;
  return m;
}

// Remembers (op, inputs, attrs) with a recognizable result, and asks for `asked`.
const OutputMeta* remember_then_find(LaneMetaMemo& memo, OpId op, std::vector<Tensor> inputs,
                                     const Attrs& attrs, OpId asked_op,
                                     std::vector<Tensor> asked_inputs, const Attrs& asked_attrs,
                                     uint64_t asked_place = kPlace) {
  memo.remember(kPlace, OpCall{op, inputs, attrs}, meta_of({7, 3}, DType::Float64));
  return memo.find(asked_place, OpCall{asked_op, asked_inputs, asked_attrs});
}

TEST(LaneMetaMemo, AnswersTheSameCallAtTheSamePlaceWithTheRememberedResult) {
  LaneMetaMemo memo;
  const Tensor a = ones({4, 16}), b = zeros({4, 16});
  const Attrs none{};
  EXPECT_EQ(memo.find(kPlace, OpCall{OpId::Add, std::vector<Tensor>{a, b}, none}), nullptr)
      << "nothing remembered yet";
  // Other tensors with the same metadata: what a repeating interval's next op passes.
  const OutputMeta* m = remember_then_find(memo, OpId::Add, {a, b}, none, OpId::Add,
                                           {zeros({4, 16}), ones({4, 16})}, none);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->sizes, DimVector({7, 3}));
  EXPECT_EQ(m->dtype, DType::Float64);
  EXPECT_EQ(memo.answered(), 1);
  EXPECT_EQ(memo.find(kPlace ^ (1ull << 63), OpCall{OpId::Add, std::vector<Tensor>{a, b}, none}),
            nullptr)
      << "another place of the interval";
}

// Two places of one set are both kept (two ways); a third replaces the one used less recently.
TEST(LaneMetaMemo, TwoPlacesOfOneSetAreKeptAndAThirdReplacesTheOlder) {
  LaneMetaMemo memo;
  const Attrs none{};
  const std::vector<Tensor> x = {ones({16})};
  const uint64_t p1 = kPlace, p2 = kPlace ^ 1, p3 = kPlace ^ 2;  // the same top bits: one set
  auto call = [&](OpId op) { return OpCall{op, x, none}; };
  memo.remember(p1, call(OpId::Neg), meta_of({1}));
  memo.remember(p2, call(OpId::Abs), meta_of({2}));
  ASSERT_NE(memo.find(p1, call(OpId::Neg)), nullptr);
  ASSERT_NE(memo.find(p2, call(OpId::Abs)), nullptr);
  EXPECT_EQ(memo.find(p1, call(OpId::Abs)), nullptr) << "a place answers for its own op only";
  EXPECT_EQ(memo.find(p2, call(OpId::Neg)), nullptr);
  ASSERT_NE(memo.find(p1, call(OpId::Neg)), nullptr);  // p1 used last: p2 is replaced
  EXPECT_EQ(memo.find(p3, call(OpId::Exp)), nullptr);
  memo.remember(p3, call(OpId::Exp), meta_of({3}));
  EXPECT_NE(memo.find(p3, call(OpId::Exp)), nullptr);
  EXPECT_NE(memo.find(p1, call(OpId::Neg)), nullptr) << "used more recently: kept";
  EXPECT_EQ(memo.find(p2, call(OpId::Abs)), nullptr) << "replaced";
}

TEST(LaneMetaMemo, AnswersNothingForAnotherOpOrOtherInputs) {
  const Tensor a = ones({4, 16}), b = zeros({4, 16});
  const Attrs none{};
  struct Case {
    const char* what;
    OpId op;
    std::vector<Tensor> inputs;
  };
  const std::vector<Case> cases = {
      {"another op", OpId::Sub, {a, b}},
      {"another input count", OpId::Add, {a}},
      {"other sizes (broadcast)", OpId::Add, {a, zeros({16})}},
      {"other sizes, same count", OpId::Add, {a, zeros({16, 4})}},
      {"other sizes, same strides", OpId::Add, {a, zeros({8, 16})}},
      {"other strides (a transposed view)", OpId::Add, {a, zeros({16, 4}).t()}},
      {"another dtype", OpId::Add, {a, zeros({4, 16}, kFloat64)}},
      {"another rank", OpId::Add, {a, zeros({1, 4, 16})}},
  };
  for (const Case& c : cases) {
    LaneMetaMemo memo;
    EXPECT_EQ(remember_then_find(memo, OpId::Add, {a, b}, none, c.op, c.inputs, none), nullptr)
        << c.what;
    EXPECT_EQ(memo.answered(), 0) << c.what;
  }
}

TEST(LaneMetaMemo, ComparesEveryAttributeAndScalarsBitForBit) {
  const Tensor a = ones({16});
  Attrs base;
  base.scalars[0] = Scalar(0.0);
  base.ints[2] = 1;
  auto with = [&](auto change) {
    Attrs x = base;
    change(x);
    return x;
  };
  struct Case {
    const char* what;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {"-0.0 against 0.0", with([](Attrs& x) { x.scalars[0] = Scalar(-0.0); })},
      {"an integer 0 against a floating 0.0", with([](Attrs& x) { x.scalars[0] = Scalar(0); })},
      {"a bool against a floating 0.0", with([](Attrs& x) { x.scalars[0] = Scalar(false); })},
      {"the second scalar", with([](Attrs& x) { x.scalars[1] = Scalar(1); })},
      {"an int", with([](Attrs& x) { x.ints[3] = 5; })},
      {"the dims", with([](Attrs& x) { x.dims = DimVector({0}); })},
      {"the dtype", with([](Attrs& x) { x.dtype = DType::Int32; })},
  };
  for (const Case& c : cases) {
    LaneMetaMemo memo;
    EXPECT_EQ(remember_then_find(memo, OpId::Mul, {a}, base, OpId::Mul, {a}, c.attrs), nullptr)
        << c.what;
  }
  LaneMetaMemo memo;
  EXPECT_NE(
      remember_then_find(memo, OpId::Mul, {a}, base, OpId::Mul, {ones({16})}, with([](Attrs&) {})),
      nullptr)
      << "equal attributes";
  const double nan = std::nan("");
  Attrs with_nan = with([&](Attrs& x) { x.scalars[1] = Scalar(nan); });
  EXPECT_NE(remember_then_find(memo, OpId::Mul, {a}, with_nan, OpId::Mul, {a}, with_nan), nullptr)
      << "the same NaN is the same scalar";
}

// A place whose call keeps changing (a scalar that changes every interval) is rewritten at the
// 1st, 2nd, 4th, 8th, ... consecutive miss only: a rewrite costs more than the meta function.
TEST(LaneMetaMemo, APlaceThatKeepsMissingIsRewrittenAtPowersOfTwo) {
  LaneMetaMemo memo;
  const std::vector<Tensor> x = {ones({16})};
  auto attrs = [](int k) {
    Attrs a{};
    a.scalars[0] = Scalar(1.0 + k);
    return a;
  };
  auto find = [&](int k) { return memo.find(kPlace, OpCall{OpId::Mul, x, attrs(k)}); };
  memo.remember(kPlace, OpCall{OpId::Mul, x, attrs(0)}, meta_of({16}));
  for (int k = 1; k <= 7; ++k) {
    ASSERT_EQ(find(k), nullptr) << "scalar " << k;
    memo.remember(kPlace, OpCall{OpId::Mul, x, attrs(k)}, meta_of({16}));
  }
  // Misses 1, 2 and 4 wrote scalars 1, 2 and 4; misses 3, 5, 6 and 7 wrote nothing.
  EXPECT_EQ(find(7), nullptr);
  EXPECT_EQ(find(5), nullptr);
  EXPECT_NE(find(4), nullptr) << "written at the 4th miss";
  // A match starts the count again: the next change is learnt at once.
  EXPECT_EQ(find(9), nullptr);
  memo.remember(kPlace, OpCall{OpId::Mul, x, attrs(9)}, meta_of({16}));
  EXPECT_NE(find(9), nullptr);
}

TEST(LaneMetaMemo, RemembersNoOpOfMoreThanItsInputsOrDims) {
  LaneMetaMemo memo;
  const Attrs none{};
  std::vector<Tensor> many(LaneMetaMemo::kInputs + 1, ones({4}));
  EXPECT_EQ(remember_then_find(memo, OpId::Cat, many, none, OpId::Cat, many, none), nullptr);
  const Tensor high = ones({1, 2, 1, 2, 1, 2, 1});  // kDims + 1 dims
  EXPECT_EQ(remember_then_find(memo, OpId::Neg, {high}, none, OpId::Neg, {high}, none), nullptr);
  const Tensor six = ones({1, 2, 1, 2, 1, 2});
  EXPECT_NE(remember_then_find(memo, OpId::Neg, {six}, none, OpId::Neg, {six}, none), nullptr);
}

}  // namespace kiln::lane_meta_memo_test
