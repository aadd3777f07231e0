// vecmath::exp<true> (ops/cpu/vecmath/exp_log.h: the lanes below kLo zeroed instead of
// underflowing, which costs Intel cores a microcode assist per vector) is the same function as
// vecmath::exp: bitwise over every 251st float32 bit pattern (17 million values: every exponent,
// the whole underflow range, denormals, +-0, +-inf and NaN) and 2^22 float64 values (half random
// bit patterns, half uniform over [-800, 800]), at every vector width the eager kernels use.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cpu/vecmath/gnu_vec_ops.h"
#include "ops/cpu/vecmath/vecmath.h"
#include "suite_passes.h"

namespace vm = kiln::vecmath;

namespace {

template <class T, int W>
int64_t differences(const std::vector<T>& xs) {
  using O = vm::GnuVecOps<T, W>;
  const O o;
  int64_t bad = 0;
  for (size_t i = 0; i + O::kLanes <= xs.size(); i += O::kLanes) {
    T a[O::kLanes], b[O::kLanes];
    const typename O::F x = O::load(xs.data() + i);
    O::store(a, vm::exp<true>(o, x));
    O::store(b, vm::exp(o, x));
    for (int l = 0; l < O::kLanes; ++l)
      if (std::memcmp(&a[l], &b[l], sizeof(T)) != 0 && bad++ < 5)
        ADD_FAILURE() << "exp<true>(" << xs[i + l] << ") = " << a[l] << ", exp " << b[l];
  }
  return bad;
}

template <class T>
void every_width(std::vector<T> xs) {
  xs.resize(xs.size() / 16 * 16);
  EXPECT_EQ((differences<T, 16>(xs)), 0);
  EXPECT_EQ((differences<T, 32>(xs)), 0);
  EXPECT_EQ((differences<T, 64>(xs)), 0);
}

TEST(VecmathExpUnderflow, ZeroingBelowTheRangeKeepsEveryFloat32Bit) {
  KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("vector math");
  std::vector<float> xs;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 251) {
    const uint32_t b = static_cast<uint32_t>(u);
    float x;
    std::memcpy(&x, &b, 4);
    xs.push_back(x);
  }
  for (float x : {-INFINITY, INFINITY, NAN, -NAN, -104.0f, std::nextafter(-104.0f, 0.0f),
                  std::nextafter(-104.0f, -200.0f), -103.97f, -87.34f, -0.0f, 0.0f})
    xs.push_back(x);
  every_width(xs);
}

TEST(VecmathExpUnderflow, ZeroingBelowTheRangeKeepsFloat64Bits) {
  KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("vector math");
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> near(-800.0, 800.0);
  std::vector<double> xs;
  for (int i = 0; i < (1 << 21); ++i) {
    const uint64_t u = g();
    double x;
    std::memcpy(&x, &u, 8);
    xs.push_back(x);
    xs.push_back(near(g));
  }
  for (double x :
       {-double(INFINITY), double(INFINITY), double(NAN), -746.0, std::nextafter(-746.0, 0.0),
        std::nextafter(-746.0, -1e3), -745.13, -708.4, -0.0, 0.0})
    xs.push_back(x);
  every_width(xs);
}

}  // namespace
