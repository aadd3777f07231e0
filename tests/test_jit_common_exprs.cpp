// merge_common_exprs (jit/loop/common_exprs.h): equal expressions merged, dead ones dropped,
// inputs, params and stores kept; constants compared by their bits (-0 is not +0, a NaN
// constant merges with its own bits); leaves of different inputs, params or RowSize offsets
// stay apart; the merged kernel verifies and computes the same values (it is launched on every
// ISA against the original kernel's results, bitwise).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/loop/common_exprs.h"
#include "jit/loop/loop_kernel.h"
#include "jit_kernel_util.h"

namespace kiln::jit {
namespace {

int count_op(const LoopKernel& k, ExprOp op) {
  int n = 0;
  for (const Expr& e : k.exprs) n += e.op == op;
  return n;
}

TEST(JitCommonExprs, LayerNormSumsTheRowOnce) {
  // As lowered: mean = sum(x) / n; var = sum((x - sum(x) / n)^2) / n; (x - mean) / sqrt(var).
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  const int32_t x = k.load(0);
  const int32_t mean =
      k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(k.inputs[0]));
  const int32_t x2 = k.load(0);
  const int32_t mean2 =
      k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x2), k.row_size(k.inputs[0]));
  const int32_t d = k.binary(ExprOp::Sub, x2, mean2);
  const int32_t var =
      k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, d, d)),
               k.row_size(k.inputs[0]));
  k.stores = {k.binary(ExprOp::Div, k.binary(ExprOp::Sub, x, mean), k.unary(ExprOp::Sqrt, var))};
  const LoopKernel m = merge_common_exprs(k);
  m.verify();
  EXPECT_EQ(count_op(k, ExprOp::ReduceSum), 3);
  EXPECT_EQ(count_op(m, ExprOp::ReduceSum), 2) << to_text(m);
  EXPECT_EQ(count_op(m, ExprOp::Load), 1) << to_text(m);
  EXPECT_EQ(count_op(m, ExprOp::RowSize), 1) << to_text(m);
  EXPECT_EQ(count_op(m, ExprOp::Sub), 1) << to_text(m);  // x - mean, once
  EXPECT_EQ(m.inputs, k.inputs);
  ASSERT_EQ(m.stores.size(), 1u);
  EXPECT_EQ(merge_common_exprs(m), m) << "merging is idempotent";
}

TEST(JitCommonExprs, LeavesThatDifferStayApart) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2, 2);
  const int32_t a = k.load(0), b = k.load(1), p = k.param(0), q = k.param(1);
  const int32_t pz = k.constant(0.0, DType::Float32), nz = k.constant(-0.0, DType::Float32);
  const int32_t nan1 = k.constant(std::numeric_limits<double>::quiet_NaN(), DType::Float32);
  const int32_t nan2 = k.constant(std::numeric_limits<double>::quiet_NaN(), DType::Float32);
  const int32_t r0 = k.row_size(DType::Float32, 0), r1 = k.row_size(DType::Float32, 1);
  int32_t acc = k.binary(ExprOp::Add, a, b);
  for (int32_t v : {p, q, pz, nz, nan1, nan2, r0, r1}) acc = k.binary(ExprOp::Mul, acc, v);
  k.stores = {k.reduce(ExprOp::ReduceSum, acc)};
  const LoopKernel m = merge_common_exprs(k);
  m.verify();
  EXPECT_EQ(count_op(m, ExprOp::Load), 2);
  EXPECT_EQ(count_op(m, ExprOp::Param), 2);
  EXPECT_EQ(count_op(m, ExprOp::RowSize), 2);
  EXPECT_EQ(count_op(m, ExprOp::Const), 3) << "+0, -0 and one NaN (equal bits)\n" << to_text(m);
  EXPECT_EQ(m.exprs.size(), k.exprs.size() - 1);
}

TEST(JitCommonExprs, DeadExpressionsGoInputsAndParamsStay) {
  LoopKernel k = LoopKernel::uniform(DType::Float64, 3, 1);
  const int32_t x = k.load(0);
  k.unary(ExprOp::Exp, k.load(1));  // read by no store
  k.param(0);
  k.stores = {k.binary(ExprOp::Add, x, x), k.binary(ExprOp::Add, x, x), x};
  const LoopKernel m = merge_common_exprs(k);
  m.verify();
  EXPECT_EQ(m.inputs, k.inputs);
  EXPECT_EQ(m.params, k.params);
  EXPECT_EQ(m.exprs.size(), 2u) << to_text(m);
  ASSERT_EQ(m.stores.size(), 3u);
  EXPECT_EQ(m.stores[0], m.stores[1]);
  EXPECT_EQ(m.stores[2], 0);
}

// The merged kernel computes the original's values: a pointwise chain with repeated
// subexpressions (and a transcendental), launched on every ISA, bitwise.
TEST(JitCommonExprs, MergedKernelComputesTheSameBits) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
  auto t = [&] {  // tanh(x * 0.7109375 + y), built anew each time
    return k.unary(ExprOp::Tanh,
                   k.binary(ExprOp::Add,
                            k.binary(ExprOp::Mul, k.load(0), k.constant(0.7109375, DType::Float32)),
                            k.load(1)));
  };
  const int32_t u = t(), v = t();
  k.stores = {k.binary(ExprOp::Mul, u, v), k.binary(ExprOp::Sub, t(), k.load(1))};
  const LoopKernel m = merge_common_exprs(k);
  EXPECT_EQ(count_op(m, ExprOp::Tanh), 1) << to_text(m);
  constexpr int64_t kN = 103;
  std::vector<float> x(kN), y(kN);
  for (int64_t i = 0; i < kN; ++i) {
    x[i] = std::ldexp(static_cast<float>(i) - 51.0f, static_cast<int>(i % 7) - 3);
    y[i] = static_cast<float>(i % 13) * -0.375f;
  }
  x[5] = std::numeric_limits<float>::infinity();
  for (const std::string& isa : testing::supported_jit_isas()) {
    testing::ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    std::vector<std::vector<float>> out[2];
    for (int which = 0; which < 2; ++which) {
      auto kernel = cpu_target().compile(which == 0 ? k : m);
      out[which].assign(2, std::vector<float>(kN, -1.0f));
      LaunchArgs la;
      la.sizes = {kN};
      la.ptrs = {reinterpret_cast<char*>(out[which][0].data()),
                 reinterpret_cast<char*>(out[which][1].data()), reinterpret_cast<char*>(x.data()),
                 reinterpret_cast<char*>(y.data())};
      la.strides.assign(4, DimVector{4});
      kernel->launch(la);
    }
    for (int o = 0; o < 2; ++o)
      for (int64_t i = 0; i < kN; ++i)
        ASSERT_EQ(std::memcmp(&out[0][o][i], &out[1][o][i], 4), 0)
            << isa << " output " << o << " element " << i;
  }
}

}  // namespace
}  // namespace kiln::jit
