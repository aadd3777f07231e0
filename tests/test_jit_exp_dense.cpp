// The JIT's exp family against eager over the whole float range, bitwise (NaN sign and payload
// aside), on every ISA path the host runs: the unary kernels Exp, Expm1, Sigmoid, Erf and Pow's
// exp (through `Pow(2.5, x)`), Float32 on every 1021st bit pattern (4.2 million values:
// denormals, the under- and overflow thresholds, inf and NaN included) and Float64 on 2^18
// random bit patterns plus 2^18 values log-uniform in magnitude up to 2^10 (every exponent
// where the functions are neither 0, 1 nor inf). These are the functions whose last step is
// scale2 (ops/cpu/vecmath/common.h): on AVX-512 the JIT emits it as one vscalefps / vscalefpd,
// eager as two exact multiplies; the two must agree on every value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/math.h"
#include "jit_kernel_util.h"
#include "kiln/kiln.h"
#include "suite_passes.h"

namespace kiln {
namespace {

using testing::canonical_bits;
using testing::ConfigOverride;

template <class T>
std::vector<T> dense_values() {
  std::vector<T> v;
  if constexpr (sizeof(T) == 4) {
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 1021) {
      const auto u = static_cast<uint32_t>(b);
      float x;
      std::memcpy(&x, &u, 4);
      v.push_back(x);
    }
  } else {
    std::mt19937_64 g(11);
    std::uniform_real_distribution<double> e(-1074.0, 10.0);
    for (int i = 0; i < (1 << 18); ++i) {
      const uint64_t u = g();
      double x;
      std::memcpy(&x, &u, 8);
      v.push_back(x);
      v.push_back((i % 2 ? -1.0 : 1.0) * std::exp2(e(g)));
    }
  }
  return v;
}

Tensor eager_of(jit::ExprOp op, const Tensor& x) {
  switch (op) {
    case jit::ExprOp::Exp:
      return exp(x);
    case jit::ExprOp::Expm1:
      return expm1(x);
    case jit::ExprOp::Sigmoid:
      return sigmoid(x);
    case jit::ExprOp::Erf:
      return erf(x);
    case jit::ExprOp::Tanh:
      return tanh(x);
    case jit::ExprOp::Log:
      return log(x);
    case jit::ExprOp::Log1p:
      return log1p(x);
    case jit::ExprOp::Sin:
      return sin(x);
    case jit::ExprOp::Cos:
      return cos(x);
    default:
      return pow(full_like(x, 2.5), x);
  }
}

// Compiles `k` (one input of xs' type, one output) for `isa`, runs it over `xs` and checks
// its output bitwise (NaN sign and payload aside) against `want`.
template <class T>
void expect_kernel_gives(const jit::LoopKernel& k, const std::string& isa, const std::vector<T>& xs,
                         const Tensor& want, const std::string& what) {
  const auto n = static_cast<int64_t>(xs.size());
  std::shared_ptr<jit::CompiledKernel> ck;
  {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    ck = jit::cpu_target().compile(k);
  }
  std::vector<T> out(xs.size(), T(-7));
  jit::LaunchArgs la;
  la.sizes = {n};
  la.ptrs = {reinterpret_cast<char*>(out.data()),
             reinterpret_cast<char*>(const_cast<T*>(xs.data()))};
  la.strides = {{static_cast<int64_t>(sizeof(T))}, {static_cast<int64_t>(sizeof(T))}};
  ck->launch(la);
  const T* w = want.data_ptr<T>();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i)
    if (canonical_bits(out[i]) != canonical_bits(w[i]) && bad++ < 5)
      ADD_FAILURE() << isa << " " << what << "(" << xs[i] << "): got " << out[i] << ", eager "
                    << w[i];
  EXPECT_EQ(bad, 0) << isa << " " << what;
}

template <class T>
void dense_on(const std::string& isa, const std::vector<T>& xs) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const auto n = static_cast<int64_t>(xs.size());
  const Tensor tx = from_vector<T>(xs, {n});
  for (jit::ExprOp op : {jit::ExprOp::Exp, jit::ExprOp::Expm1, jit::ExprOp::Sigmoid,
                         jit::ExprOp::Erf, jit::ExprOp::Pow, jit::ExprOp::Tanh, jit::ExprOp::Log,
                         jit::ExprOp::Log1p, jit::ExprOp::Sin, jit::ExprOp::Cos}) {
    Tensor want;
    {
      testing::JitMode off(false);
      want = eager_of(op, tx).contiguous();
    }
    jit::LoopKernel k = jit::LoopKernel::uniform(dtype, 1);
    const int32_t x = k.load(0);
    k.stores = {op == jit::ExprOp::Pow ? k.binary(op, k.constant(2.5, dtype), x) : k.unary(op, x)};
    expect_kernel_gives(k, isa, xs, want,
                        std::string(dtype_name(dtype)) + " " + jit::expr_op_name(op));
  }
}

// exp of `where(x < -inf, -inf, x)` (= x: nothing is below -inf): a select of -inf feeds the
// exp, so the JIT renders vecmath::exp<true> (zeroing the lanes below its range instead of
// underflowing, docs/numerics.md; also for `x - amax(x)`, checked below); it must still give
// eager's exp bits on every value.
template <class T>
void exp_of_masked_on(const std::string& isa, const std::vector<T>& xs) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  Tensor want;
  {
    testing::JitMode off(false);
    want = exp(from_vector<T>(xs, {static_cast<int64_t>(xs.size())})).contiguous();
  }
  jit::LoopKernel k = jit::LoopKernel::uniform(dtype, 1);
  const int32_t x = k.load(0);
  const int32_t minus_inf = k.constant(-INFINITY, dtype);
  const int32_t masked = k.select(k.binary(jit::ExprOp::Lt, x, minus_inf), minus_inf, x);
  k.stores = {k.unary(jit::ExprOp::Exp, masked)};
  ASSERT_TRUE(jit::exp_input_may_be_masked(k, masked));
  ASSERT_FALSE(jit::exp_input_may_be_masked(k, x));
  // Masks of finite constants count where exp underflows far below them, not above.
  jit::LoopKernel finite = jit::LoopKernel::uniform(dtype, 1);
  const int32_t y = finite.load(0);
  const int32_t huge = finite.binary(jit::ExprOp::Sub, finite.constant(-1e4, dtype), y);
  const int32_t mild = finite.binary(jit::ExprOp::Sub, finite.constant(-50.0, dtype), y);
  EXPECT_TRUE(jit::exp_input_may_be_masked(finite, huge));
  EXPECT_FALSE(jit::exp_input_may_be_masked(finite, mild));
  // Scores shifted by their row's max (softmax, logsumexp's shift) may hold a mask loaded from
  // memory (`softmax(s + mask)`: 2.8x slower through the assists on an Emerald Rapids VM); a
  // difference of two loads is no such shift.
  jit::LoopKernel rows = jit::LoopKernel::uniform(dtype, 2);
  const int32_t s = rows.binary(jit::ExprOp::Add, rows.load(0), rows.load(1));
  const int32_t mx = rows.reduce(jit::ExprOp::ReduceMax, s);
  const int32_t shift =
      rows.select(rows.binary(jit::ExprOp::Eq, mx, rows.constant(INFINITY, dtype)),
                  rows.constant(0.0, dtype), mx);
  EXPECT_TRUE(jit::exp_input_may_be_masked(rows, rows.binary(jit::ExprOp::Sub, s, mx)));
  EXPECT_TRUE(jit::exp_input_may_be_masked(rows, rows.binary(jit::ExprOp::Sub, s, shift)));
  EXPECT_FALSE(jit::exp_input_may_be_masked(rows, rows.binary(jit::ExprOp::Sub, s, rows.load(1))));
  expect_kernel_gives(k, isa, xs, want, std::string(dtype_name(dtype)) + " exp of masked");
}

TEST(JitExpDense, ExpOfMaskedValuesGivesEagerBitsOverTheWholeRangeEveryIsa) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  const std::vector<float> f = dense_values<float>();
  const std::vector<double> d = dense_values<double>();
  for (const std::string& isa : testing::supported_jit_isas()) {
    exp_of_masked_on<float>(isa, f);
    exp_of_masked_on<double>(isa, d);
  }
}

TEST(JitExpDense, ExpFamilyGivesEagerBitsOverTheWholeRangeEveryIsa) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  const std::vector<float> f = dense_values<float>();
  const std::vector<double> d = dense_values<double>();
  for (const std::string& isa : testing::supported_jit_isas()) {
    dense_on<float>(isa, f);
    dense_on<double>(isa, d);
  }
}

}  // namespace
}  // namespace kiln
