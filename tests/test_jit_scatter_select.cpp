// The CPU JIT's rewrite of a scatter_add into zeros of one value per line into a select
// (jit/passes/scatter_select.h, ops/scatter_rows.cpp): eager's bits for a gather's gradient (a
// hand-written NLL) and for direct scatters (signed zeros, NaN, Int32 and Int64 indices, batch
// dims), no scatter_add or fill left in the plan, scatter_add's error for an index out of range,
// and a plan recorded with an index over every line running one whose index reaches fewer.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "jit_recorded_util.h"

namespace kiln {
namespace {

using JitScatterSelectTest = testing::JitRecordedTest<>;
using testing::expect_error;
using testing::JitMode;

TEST_F(JitScatterSelectTest, HandWrittenNllGradientIsASelectBitwise) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t classes : {1, 17, 1000}) {
      const std::string what = fmt::format("{} C={}", dtype_name(dt), classes);
      const Tensor x = testing::eager_normal({37, classes}, 600 + classes, dt);
      const Tensor t = testing::eager_randint({37}, classes, 601 + classes);
      tracer::RegionCache::instance().clear();
      testing::expect_iterations_match(
          [&](int) {
            const Tensor g = x.detach().requires_grad_();
            const Tensor loss = -log_softmax(g * 1.5, -1).gather(1, t.unsqueeze(1)).mean();
            loss.backward();
            return TensorList{loss, g.grad()};
          },
          3, what);
      int kernels = 0;
      const std::vector<OpId> ops = testing::plan_eager_ops(&kernels);
      EXPECT_FALSE(testing::contains_op(ops, OpId::ScatterAdd)) << what;
      EXPECT_FALSE(testing::contains_op(ops, OpId::Fill)) << what;
      EXPECT_TRUE(testing::contains_op(ops, OpId::ScatterRowIndex)) << what;
      EXPECT_GE(kernels, 1) << what;
    }
  }
}

TEST_F(JitScatterSelectTest, DirectScattersGiveEagerBits) {
  const float nan = std::nanf(""), inf = INFINITY;
  for (DType it : {kInt64, kInt32}) {
    for (DType dt : {kFloat32, kFloat64, kInt64}) {
      const std::string what = fmt::format("{} index {}", dtype_name(dt), dtype_name(it));
      Tensor src, index;
      {
        JitMode off(false);
        // Signed zeros, NaN and infinities among the sources (Int64: their conversions).
        std::vector<float> v = {-0.0f, 0.0f,   nan,  -inf,  inf,  2.5f,
                                -3.0f, 1e-40f, 7.0f, -0.0f, 1.0f, 4.0f};
        if (dt == kInt64) v = {-1, 0, 5, -7, 1, 2, 3, 4, 9, -9, 6, 8};
        src = from_vector(v, {2, 6, 1}).to(dt);
        index = testing::eager_randint({12}, 9, 610, it).reshape({2, 6, 1});
      }
      tracer::RegionCache::instance().clear();
      testing::expect_iterations_match(
          [&](int) {
            const Tensor out =
                scatter_add(zeros({2, 6, 9}, TensorOptions().dtype(dt)), -1, index, src);
            // Fills of another value (-0 included) stay scatters: 2.5 + src, -0 + src.
            const bool ints = dt == kInt64;
            const Tensor other = scatter_add(
                full({2, 6, 9}, ints ? Scalar(int64_t{2}) : Scalar(2.5), TensorOptions().dtype(dt)),
                -1, index, src);
            const Tensor minus_zero =
                scatter_add(full({2, 6, 9}, ints ? Scalar(int64_t{0}) : Scalar(-0.0),
                                 TensorOptions().dtype(dt)),
                            -1, index, src);
            return TensorList{out * 2.0, out.sum({-1}), other, minus_zero};
          },
          2, what);
      int kernels = 0;
      const std::vector<OpId> ops = testing::plan_eager_ops(&kernels);
      // The zeros' scatter (and Int64's 0 fill) rewritten; 2.5's and -0's kept.
      EXPECT_EQ(std::count(ops.begin(), ops.end(), OpId::ScatterAdd), dt == kInt64 ? 1 : 2) << what;
      EXPECT_TRUE(testing::contains_op(ops, OpId::ScatterRowIndex)) << what;
    }
  }
}

TEST_F(JitScatterSelectTest, AnIndexOutOfRangeRaisesScatterAddsError) {
  Tensor bad;
  {
    JitMode off(false);
    bad = testing::eager_randint({8}, 5, 620).unsqueeze(1);
    bad.narrow(0, 6, 1).fill_(5);
  }
  const Tensor src = testing::eager_normal({8, 1}, 621);
  const Tensor good = testing::eager_randint({8}, 5, 622).unsqueeze(1);
  auto program = [&](const Tensor& index) {
    return (scatter_add(zeros({8, 5}), 1, index, src) * 2.0).sum().item<float>();
  };
  for (bool jit : {false, true}) {
    JitMode mode(jit);
    tracer::RegionCache::instance().clear();
    program(good);  // with the JIT: the plan, which the bad index then runs
    expect_error([&] { program(bad); }, "scatter_add",
                 "index 5 is out of range for dim 1 of size 5");
  }
  EXPECT_TRUE(testing::contains_op(testing::plan_eager_ops(), OpId::ScatterRowIndex));
}

// One region, two recordings: the plan made from an index over all 6 lines runs one whose
// index (a graph input of another batch size) reaches 4 of them; lines 4 and 5 stay zero, as
// eager leaves them.
TEST_F(JitScatterSelectTest, APlanRunsAnIndexReachingFewerLines) {
  const Tensor full_index = testing::eager_randint({6}, 7, 630).unsqueeze(1);
  const Tensor short_index = testing::eager_randint({4}, 7, 631).unsqueeze(1);
  const Tensor src = testing::eager_normal({6, 1}, 632);
  auto program = [&](int it) {
    const Tensor index = it == 0 ? full_index : short_index;
    return TensorList{scatter_add(zeros({6, 7}), 1, index, src) + 1.0};
  };
  testing::expect_iterations_match(program, 2, "short index");
  EXPECT_EQ(tracer::RegionCache::instance().regions().size(), 1u);
  int kernels = 0;
  const std::vector<OpId> ops = testing::plan_eager_ops(&kernels);
  EXPECT_FALSE(testing::contains_op(ops, OpId::ScatterAdd));
  EXPECT_TRUE(testing::contains_op(ops, OpId::ScatterRowIndex));
}

// Random shapes: rank 1 to 3, the index reaching all lines or fewer along each kept dim (a
// source at least as large), Int32 and Int64 indices, Float32, Float64 and Int64 values, the
// result read by a row sum and an elementwise op; eager's bits, the scatter gone from the plan.
TEST_F(JitScatterSelectTest, RandomShapesGiveEagerBits) {
  std::mt19937 rng(640);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 40; ++round) {
    const int64_t rank = pick(1, 3);
    std::vector<int64_t> out, index_shape, src_shape;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      out.push_back(pick(1, 9));
      index_shape.push_back(pick(0, 1) ? out.back() : pick(1, out.back()));
      src_shape.push_back(pick(index_shape.back(), out.back() + 2));
    }
    out.push_back(pick(1, 40));
    index_shape.push_back(1);
    src_shape.push_back(pick(1, 2));
    const DType dt = std::array{kFloat32, kFloat64, kInt64}[pick(0, 2)];
    const DType it = pick(0, 1) ? kInt64 : kInt32;
    const std::string what = fmt::format("round {}: out {} index {} src {} {} {}", round,
                                         fmt::join(out, "x"), fmt::join(index_shape, "x"),
                                         fmt::join(src_shape, "x"), dtype_name(dt), dtype_name(it));
    Tensor index, src;
    {
      JitMode off(false);
      manual_seed(641 + static_cast<uint64_t>(round));
      index = randint(0, out.back(), IntList(index_shape), TensorOptions().dtype(it));
      src = (randn(IntList(src_shape)) * 10.0).to(dt);
    }
    tracer::RegionCache::instance().clear();
    testing::expect_iterations_match(
        [&](int) {
          const Tensor r =
              scatter_add(zeros(IntList(out), TensorOptions().dtype(dt)), -1, index, src);
          return TensorList{r.sum({-1}), r * 3};
        },
        2, what);
    const std::vector<OpId> ops = testing::plan_eager_ops();
    EXPECT_FALSE(testing::contains_op(ops, OpId::ScatterAdd)) << what;
    EXPECT_TRUE(testing::contains_op(ops, OpId::ScatterRowIndex)) << what;
  }
}

}  // namespace
}  // namespace kiln
