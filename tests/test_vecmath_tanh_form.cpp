// vecmath::tanh is computed in a reduced form (ops/cpu/vecmath/tanh_sigmoid.h: half-argument
// reduction, no 2^k, the quotient scaled by 2^-(k+1)) that must give exactly the bits of its
// definition, e / (e + 2) with e = expm1(2 min(|x|, sat)) and x's sign, the textbook form over
// the general expm1 of exp_log.h. Checked over every 127th float32 bit pattern (34 million
// values: every exponent, denormals, inf and NaN) and 2^22 float64 values (half random bit
// patterns, half log-uniform over [2^-60, 2^6) where the reduction's steps all matter), at the
// widest vector width. (Once, while writing it: all 2^32 float32 patterns and 2e7 float64.)
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

template <class O, class F = typename O::F>
F tanh_definition(const O& o, F x) {
  const F a = vm::clamp_hi(o, vm::vabs(o, x), vm::detail::kTanhSat<typename O::T>);
  const F e = vm::expm1(o, o.add(a, a));
  return o.bit_or(o.div(e, o.add(e, o.splat(2.0))), vm::sign_of(o, x));
}

// Both forms on `xs` (a multiple of the lane count); the count of lanes whose bits differ (NaN
// payloads aside), the first few reported.
template <class T>
int64_t differences(const std::vector<T>& xs) {
  using O = vm::GnuVecOps<T, 64>;
  const O o;
  int64_t bad = 0;
  for (size_t i = 0; i + O::kLanes <= xs.size(); i += O::kLanes) {
    T a[O::kLanes], b[O::kLanes];
    const typename O::F x = O::load(xs.data() + i);
    O::store(a, vm::tanh(o, x));
    O::store(b, tanh_definition(o, x));
    for (int l = 0; l < O::kLanes; ++l) {
      if (std::isnan(a[l]) && std::isnan(b[l])) continue;
      if (std::memcmp(&a[l], &b[l], sizeof(T)) != 0 && bad++ < 5)
        ADD_FAILURE() << "tanh(" << xs[i + l] << "): " << a[l] << " against " << b[l];
    }
  }
  return bad;
}

TEST(VecmathTanhForm, Float32EveryExponentBitwise) {
  KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("vector math");
  std::vector<float> xs;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 127) {
    const uint32_t b = static_cast<uint32_t>(u);
    float x;
    std::memcpy(&x, &b, 4);
    xs.push_back(x);
  }
  xs.resize(xs.size() / 16 * 16);
  EXPECT_EQ(differences(xs), 0);
}

TEST(VecmathTanhForm, Float64Bitwise) {
  KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("vector math");
  std::mt19937_64 g(11);
  std::vector<double> xs;
  for (int i = 0; i < (1 << 22); ++i) {
    const uint64_t b = g();
    double x;
    if (i % 2) {
      std::memcpy(&x, &b, 8);
    } else {
      x = std::ldexp(1.0 + double(b >> 12) * 0x1p-52, int(b % 66) - 60);
      if (b & 0x800) x = -x;
    }
    xs.push_back(x);
  }
  EXPECT_EQ(differences(xs), 0);
}

}  // namespace
