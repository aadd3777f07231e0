// pow in JIT kernels (the `Pow` loop-IR expression and the lowering of pow's three forms):
//   - the kernel `Pow(in0, in1)` on every ISA path the host runs, Float32 and Float64, over a
//     dense grid of bases x exponents (zeros, infinities, NaN, denormals, huge and tiny
//     magnitudes, negative bases with integer, odd, even and non-integer exponents, the integer
//     limits 2^24 / 2^53 of the exponent's parity), bitwise against the eager pow of the same
//     grid (NaN sign and payload aside);
//   - recorded programs with pow(tensor, scalar), pow(tensor, tensor), pow(scalar, tensor),
//     integer pow (baked exponents unrolled, runtime ones looped, negative exponents), and a
//     promoted exponent that takes the special forms 2, 0.5 and 1 and near misses of them: every
//     one fused into kernels (no eager step) and bitwise equal to eager on every ISA path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/plan/jit_plan.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "ops/pointwise.h"
#include "record_util.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

using testing::canonical_bits;
using testing::ConfigOverride;
using testing::JitMode;
using testing::JitRestore;

// Bases: the special values, then both signs of magnitudes 2^e (with a few mantissas) over the
// whole range, denormals included, and small integers.
template <class T>
std::vector<T> bases() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),
                      -T(0),
                      L::infinity(),
                      -L::infinity(),
                      L::quiet_NaN(),
                      L::denorm_min(),
                      -L::denorm_min(),
                      L::min(),
                      -L::min(),
                      L::min() / 3,
                      L::max(),
                      L::lowest(),
                      L::epsilon(),
                      T(1),
                      T(-1),
                      T(0.5),
                      T(-0.5),
                      T(2),
                      T(-2),
                      T(-3),
                      T(10),
                      T(-10),
                      std::nextafter(T(1), T(2)),
                      std::nextafter(T(1), T(0)),
                      -std::nextafter(T(1), T(2))};
  const int lo = L::min_exponent - L::digits, hi = L::max_exponent;
  const int step = sizeof(T) == 4 ? 3 : 23;
  for (int e = lo; e < hi; e += step)
    for (double m : {1.0, 1.3125, 1.7}) {
      const T x = static_cast<T>(std::ldexp(m, e));
      if (x != 0 && std::isfinite(x)) {
        v.push_back(x);
        v.push_back(-x);
      }
    }
  return v;
}

// Exponents: zeros, infinities, NaN, integers (odd and even, both signs, at the limits of the
// parity test), halves, and magnitudes from tiny to huge.
template <class T>
std::vector<T> exponents() {
  using L = std::numeric_limits<T>;
  const T two_p = std::ldexp(T(1), L::digits);  // 2^24 / 2^53: every float past it is even
  std::vector<T> v = {T(0),           -T(0),         L::infinity(),   -L::infinity(),
                      L::quiet_NaN(), T(1),          T(-1),           T(2),
                      T(-2),          T(3),          T(-3),           T(0.5),
                      T(-0.5),        T(1.5),        T(-1.5),         T(2.5),
                      T(1) / 3,       T(7),          T(-7),           T(16),
                      T(-17),         T(127),        T(-149),         T(1075),
                      two_p - 1,      two_p,         two_p + 2,       -(two_p - 1),
                      two_p / 2 - 1,  two_p / 2 + 1, L::denorm_min(), L::min(),
                      L::epsilon(),   L::max(),      L::lowest(),     T(1e-7),
                      T(-1e-7),       T(1e10),       T(-1e10)};
  for (int e = -30; e <= 30; e += 2)
    for (double m : {1.0, 1.37}) {
      v.push_back(static_cast<T>(std::ldexp(m, e)));
      v.push_back(static_cast<T>(-std::ldexp(m, e)));
    }
  return v;
}

template <class T>
void dense_grid_on(const std::string& isa) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const std::vector<T> xs = bases<T>(), ys = exponents<T>();
  const auto nx = static_cast<int64_t>(xs.size()), ny = static_cast<int64_t>(ys.size());
  // The eager reference: pow of an [nx, 1] and a [1, ny] tensor.
  Tensor want;
  {
    JitMode off(false);
    const Tensor tx = from_vector<T>(xs, {nx, 1}), ty = from_vector<T>(ys, {1, ny});
    want = pow(tx, ty).contiguous();
  }
  jit::LoopKernel k = jit::LoopKernel::uniform(dtype, 2);
  k.stores = {k.binary(jit::ExprOp::Pow, k.load(0), k.load(1))};
  std::shared_ptr<jit::CompiledKernel> ck;
  {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    ck = jit::cpu_target().compile(k);
  }
  // Rows of every length around the vector width: the exponents are the inner (contiguous)
  // operand, so every one lands in every lane position over the rows' offsets.
  const auto es = static_cast<int64_t>(sizeof(T));
  for (int64_t shift : {int64_t{0}, int64_t{1}, int64_t{5}}) {
    std::vector<T> out(static_cast<size_t>(nx * ny), T(-7));
    const int64_t n = ny - shift;
    jit::LaunchArgs la;
    la.sizes = {nx, n};
    la.ptrs = {reinterpret_cast<char*>(out.data()),
               reinterpret_cast<char*>(const_cast<T*>(xs.data())),
               reinterpret_cast<char*>(const_cast<T*>(ys.data() + shift))};
    la.strides = {{n * es, es}, {es, 0}, {0, es}};
    ck->launch(la);
    const T* w = want.data_ptr<T>();
    int64_t bad = 0;
    for (int64_t i = 0; i < nx; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T got = out[static_cast<size_t>(i * n + j)], ref = w[i * ny + j + shift];
        if (canonical_bits(got) != canonical_bits(ref) && bad++ < 10)
          ADD_FAILURE() << isa << " " << dtype_name(dtype) << " pow(" << xs[i] << ", "
                        << ys[j + shift] << "): got " << got << ", eager " << ref;
      }
    EXPECT_EQ(bad, 0) << isa << " " << dtype_name(dtype) << " shift " << shift;
  }
}

TEST(JitPow, KernelGivesEagerBitsOverDenseGridEveryIsa) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    dense_grid_on<float>(isa);
    dense_grid_on<double>(isa);
  }
}

// A constant exponent (PowScalar's, a Const in the kernel) is rendered with its class known at
// render time (vecmath::pow_scalar: none of y's tests in the code): each exponent of the grid
// as its own kernel's constant, bitwise against eager's pow of the same bases and exponent.
template <class T>
void constant_exponents_on(const std::string& isa) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const std::vector<T> xs = bases<T>(), ys = exponents<T>();
  const auto nx = static_cast<int64_t>(xs.size()), ny = static_cast<int64_t>(ys.size());
  Tensor want;
  {
    JitMode off(false);
    want = pow(from_vector<T>(xs, {1, nx}), from_vector<T>(ys, {ny, 1})).contiguous();
  }
  ConfigOverride<std::string> isa_override(config().jit_isa, isa);
  for (int64_t j = 0; j < ny; ++j) {
    jit::LoopKernel k = jit::LoopKernel::uniform(dtype, 1);
    k.stores = {k.binary(jit::ExprOp::Pow, k.load(0), k.constant(double(ys[j]), dtype))};
    const std::shared_ptr<jit::CompiledKernel> ck = jit::cpu_target().compile(k);
    std::vector<T> out(static_cast<size_t>(nx), T(-7));
    const auto es = static_cast<int64_t>(sizeof(T));
    jit::LaunchArgs la;
    la.sizes = {1, nx};
    la.ptrs = {reinterpret_cast<char*>(out.data()),
               reinterpret_cast<char*>(const_cast<T*>(xs.data()))};
    la.strides = {{nx * es, es}, {nx * es, es}};
    ck->launch(la);
    const T* w = want.data_ptr<T>() + j * nx;
    int64_t bad = 0;
    for (int64_t i = 0; i < nx; ++i)
      if (canonical_bits(out[static_cast<size_t>(i)]) != canonical_bits(w[i]) && bad++ < 5)
        ADD_FAILURE() << isa << " " << dtype_name(dtype) << " pow(" << xs[i] << ", const " << ys[j]
                      << "): got " << out[static_cast<size_t>(i)] << ", eager " << w[i];
    EXPECT_EQ(bad, 0) << isa << " " << dtype_name(dtype) << " exponent " << ys[j];
  }
}

TEST(JitPow, ConstantExponentKernelsGiveEagerBitsEveryIsa) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    constant_exponents_on<float>(isa);
    constant_exponents_on<double>(isa);
  }
}

// ---- through the recorder and the planner ----

using JitPowPlanTest = testing::JitRecordedTest<>;

Tensor values(std::vector<int64_t> shape, uint64_t seed, DType dtype, double scale) {
  JitMode off(false);
  manual_seed(seed);
  return randn(IntList(shape), TensorOptions().dtype(dtype)) * scale;
}

TEST_F(JitPowPlanTest, FloatPowFormsFuseAndGiveEagerBits) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType d : {kFloat32, kFloat64}) {
      tracer::RegionCache::instance().clear();
      const Tensor x = values({7, 37}, 1, d, 3.0), y = values({7, 37}, 2, d, 2.0);
      const Tensor xi = values({37}, 3, kFloat64, 4.0).to(kInt32);
      auto program = [&](int) {
        Tensor a = (x * 1.5).pow(3.7) + 1.0;                 // a general constant exponent
        Tensor b = pow(x.abs(), y) - pow(x, y);              // two tensors (negative bases, NaN)
        Tensor c = pow(2.5, y) * pow(-2.0, x);               // a scalar base
        Tensor e = (x + 0.5).pow(-3) + x.pow(2.0000000001);  // integer-valued; a near miss of 2
        Tensor f = xi.pow(0.5) + xi.pow(-1.5);               // Int32 promoted to Float32
        return TensorList{a, b, c, e, f};
      };
      int kernels = 0;
      EXPECT_EQ(
          testing::plan_eager_steps(program, 2, isa + " " + std::string(dtype_name(d)), &kernels),
          0);
      EXPECT_GE(kernels, 1);
    }
  }
}

// A promoted exponent (it changes between iterations) is a Float64 kernel param: the special
// forms 2, 0.5 and 1 are picked at run time as PowScalarF picks them, comparing the double.
TEST_F(JitPowPlanTest, PromotedExponentPicksTheSpecialFormsAtRunTime) {
  // Iteration 1 promotes the exponent (that run is interpreted); the plan runs the others.
  const double es[] = {3.25, -1.25, 2.0, 0.5, 1.0, 2.0000000001, 0.5000000001, 0.0, -2.0};
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType d : {kFloat32, kFloat64}) {
      tracer::RegionCache::instance().clear();
      const Tensor x = values({5, 33}, 4, d, 5.0);
      auto program = [&](int it) { return TensorList{(x - 0.25).pow(es[it]) * 2.0}; };
      int kernels = 0;
      EXPECT_EQ(
          testing::plan_eager_steps(program, 9, isa + " " + std::string(dtype_name(d)), &kernels),
          0);
      EXPECT_EQ(kernels, 1);
      const auto regions = tracer::RegionCache::instance().regions();
      ASSERT_EQ(regions.size(), 1u);
      EXPECT_EQ(regions[0]->runtime_scalars().size(), 1u) << "the exponent was promoted";
    }
  }
}

// Integer pow with a baked exponent: int_pow's wrapping products, unrolled. The binary form
// (a Scalar exponent on the right) takes negative exponents: 1 / b^|e| truncated.
TEST_F(JitPowPlanTest, IntegerPowWithBakedExponentsFuses) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType d : {kInt32, kInt64}) {
      tracer::RegionCache::instance().clear();
      Tensor x;
      {
        JitMode off(false);
        x = values({6, 19}, 5, kFloat64, 6.0).to(d);
        x.select(0, 0).fill_(-1);
        x.select(0, 1).fill_(1);
      }
      auto program = [&](int) {
        Tensor a = x.pow(3) + x.pow(0) + x.pow(1);
        Tensor b = (x + 7).pow(31) - x.pow(int64_t{1} << 40);  // wraps; a long chain of squares
        Tensor c = binary_op(OpId::Pow, x, Scalar(-3)) + binary_op(OpId::Pow, x, Scalar(-4));
        Tensor e = binary_op(OpId::Pow, x * 3, Scalar(5));
        return TensorList{a, b, c, e};
      };
      int kernels = 0;
      EXPECT_EQ(
          testing::plan_eager_steps(program, 2, isa + " " + std::string(dtype_name(d)), &kernels),
          0);
      EXPECT_GE(kernels, 1);
    }
  }
}

// Integer pow with a runtime exponent (a tensor, a Scalar base, a promoted exponent) is an
// integer Pow: a loop in the kernel over the exponent's bits, negative exponents by int_pow's rule.
TEST_F(JitPowPlanTest, IntegerPowWithRuntimeExponentFuses) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType d : {kInt32, kInt64}) {
      tracer::RegionCache::instance().clear();
      Tensor x, y;
      {
        JitMode off(false);
        x = values({5, 37}, 6, kFloat64, 3.0).to(d);
        y = values({5, 37}, 7, kFloat64, 4.0).to(d);
        x.select(0, 0).fill_(-1);
        x.select(0, 1).fill_(1);
        y.select(0, 2).fill_(d == kInt32 ? INT32_MAX : INT64_MAX);  // every bit: 31 / 63 rounds
        y.select(0, 3).fill_(d == kInt32 ? INT32_MIN : INT64_MIN);
      }
      const int64_t es[] = {3, 5, 0, 1, 7, 2, 12};
      auto program = [&](int it) {
        Tensor a = pow(x + 1, y) * 2;                // tensor ^ tensor, negative exponents
        Tensor b = pow(3, y.abs()) + pow(-2, y);     // a Scalar base
        Tensor c = (x - 1).pow(Scalar(es[it])) + 1;  // promoted at iteration 1
        return TensorList{a, b, c};
      };
      int kernels = 0;
      EXPECT_EQ(
          testing::plan_eager_steps(program, 7, isa + " " + std::string(dtype_name(d)), &kernels),
          0);
      EXPECT_GE(kernels, 1);
    }
  }
}

}  // namespace
}  // namespace kiln
