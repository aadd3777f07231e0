// sin and cos in JIT kernels past the Cody-Waite range (|x| > 6000 for Float32, 1.5e6 for
// Float64): the vector emitter's reduce_pio2_huge hook (jit/cpu/vec_emitter.h) calls the exact
// reduction of ops/cpu/reduce_pio2.cpp from generated code, lanes spilled around the call. The
// kernel keeps 40 vectors and a mask live across the calls (more than the 32 / 16 vector
// registers, so the register allocator must save what the SysV ABI lets the callee clobber),
// and its inputs put huge arguments in no lane, one lane, every lane and the tail of vectors, on
// every ISA path, at every length around the vector width (the scalar loop calls per element):
// every output bitwise equal to the scalar reference computed with eager's sin and cos.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit_kernel_util.h"
#include "record_util.h"
#include "runtime/parallel.h"

namespace kiln::jit {
namespace {

using kiln::testing::canonical_bits;
using kiln::testing::ConfigOverride;
using kiln::testing::JitMode;

constexpr int kLive = 40;

// out0 = (x < y ? sin(x) : cos(x)) + v_0 + ... + v_39 with v_i = y * a_i + b_i computed before
// the calls; out1 = sin(x); out2 = cos(x * 3).
LoopKernel live_across_calls(DType t) {
  LoopKernel k = LoopKernel::uniform(t, 2);
  const int32_t x = k.load(0), y = k.load(1);
  const int32_t m = k.binary(ExprOp::Lt, x, y);
  std::vector<int32_t> v;
  for (int i = 0; i < kLive; ++i)
    v.push_back(k.binary(ExprOp::Add, k.binary(ExprOp::Mul, y, k.constant(1.0 + i * 0.125, t)),
                         k.constant(-3.0 + i, t)));
  const int32_t s = k.unary(ExprOp::Sin, x);
  const int32_t c = k.unary(ExprOp::Cos, k.binary(ExprOp::Mul, x, k.constant(3.0, t)));
  int32_t acc = k.select(m, s, c);
  for (int32_t vi : v) acc = k.binary(ExprOp::Add, acc, vi);
  k.stores = {acc, s, c};
  return k;
}

// Arguments: blocks of `lanes` elements that are all ordinary, have one huge lane (at a moving
// position), are all huge, or mix huge with inf, NaN, the bound itself and just past it.
template <class T>
std::vector<T> arguments(int lanes, int64_t n, std::mt19937& rng) {
  using L = std::numeric_limits<T>;
  const T bound = static_cast<T>(vecmath::detail::SinCosC<T>::kHuge);
  const T specials[] = {L::infinity(), -L::infinity(), L::quiet_NaN(),
                        bound,         -bound,         std::nextafter(bound, L::infinity()),
                        L::max(),      L::lowest(),    T(1e30),
                        T(-7.5e22),    T(4.5e7),       T(-1.25e12),
                        T(0),          -T(0)};
  std::uniform_real_distribution<double> small(-100, 100), expo(4, sizeof(T) == 4 ? 38 : 300);
  auto huge = [&] { return static_cast<T>((rng() % 2 ? 1 : -1) * std::pow(10.0, expo(rng))); };
  std::vector<T> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t block = i / lanes, lane = i % lanes;
    T v = static_cast<T>(small(rng));
    switch (block % 4) {
      case 1:
        if (lane == block % lanes) v = huge();
        break;
      case 2:
        v = huge();
        break;
      case 3:
        v = rng() % 2 ? specials[rng() % std::size(specials)] : huge();
        break;
      default:
        break;
    }
    x[static_cast<size_t>(i)] = v;
  }
  return x;
}

template <class T>
void huge_on(const std::string& isa, std::mt19937& rng) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const LoopKernel k = live_across_calls(dtype);
  std::shared_ptr<CompiledKernel> ck;
  {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    ck = cpu_target().compile(k);
  }
  const int L = kiln::testing::jit_lanes(isa, sizeof(T));
  for (int64_t n : {int64_t{1}, int64_t{L - 1}, int64_t{L}, int64_t{2 * L + 1}, int64_t{16 * L + 3},
                    int64_t{203}}) {
    const std::vector<T> x = arguments<T>(L, n, rng);
    std::vector<T> y(static_cast<size_t>(n));
    std::normal_distribution<double> nd;
    for (T& v : y) v = static_cast<T>(nd(rng) * 50);
    std::vector<std::vector<T>> out(3, std::vector<T>(static_cast<size_t>(n), T(-1)));
    LaunchArgs la;
    la.sizes = {n};
    const auto es = static_cast<int64_t>(sizeof(T));
    for (auto& o : out) la.ptrs.push_back(reinterpret_cast<char*>(o.data()));
    la.ptrs.push_back(reinterpret_cast<char*>(const_cast<T*>(x.data())));
    la.ptrs.push_back(reinterpret_cast<char*>(y.data()));
    la.strides.assign(5, DimVector{es});
    ck->launch(la);
    JitMode off(false);  // the reference's sin and cos are eager's
    int64_t huge_lanes = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T in[2] = {x[i], y[i]};
      T want[3];
      kiln::testing::reference_eval<T>(k, in, nullptr, want);
      huge_lanes += std::isfinite(x[i]) && std::fabs(x[i]) > vecmath::detail::SinCosC<T>::kHuge;
      for (int j = 0; j < 3; ++j)
        EXPECT_EQ(canonical_bits(out[j][i]), canonical_bits(want[j]))
            << isa << " " << dtype_name(dtype) << " n=" << n << " element " << i << " x=" << x[i]
            << " output " << j << ": got " << out[j][i] << ", want " << want[j];
    }
    if (n >= 2 * L + 1) {
      EXPECT_GT(huge_lanes, 0) << "the test must reach the exact reduction";
    }
  }
}

TEST(JitSinCosHuge, ExactReductionWithValuesLiveAcrossTheCallEveryIsa) {
  std::mt19937 rng(11);
  for (const std::string& isa : kiln::testing::supported_jit_isas()) {
    huge_on<float>(isa, rng);
    huge_on<double>(isa, rng);
  }
}

// Above the parallel grain on two threads: each thread's kernel calls the reduction itself.
TEST(JitSinCosHuge, HugeArgumentsOnTwoThreads) {
  for (const std::string& isa : kiln::testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    const int64_t n = 1 << 17;
    Tensor x;
    {
      JitMode off(false);
      manual_seed(12);
      x = randn({n}) * 1e6;
    }
    Tensor want, got;
    {
      JitMode off(false);
      want = (x.sin() + x.cos()) * 0.5;
    }
    {
      const int saved = config().num_threads;
      set_num_threads(2);
      {
        JitMode on(true);
        got = (x.sin() + x.cos()) * 0.5;
      }
      set_num_threads(saved);
    }
    kiln::testing::expect_bitwise_equal(got, want, isa.c_str());
  }
}

}  // namespace
}  // namespace kiln::jit
