// Accuracy of kiln's vector math (ops/cpu/vecmath/*.h) against long double references, over the
// whole range of each dtype: every k-th float32 bit pattern (both signs, denormals, inf and NaN
// included) and, for float64, samples log-uniform over every exponent. The bounds asserted are the
// documented ones (docs/numerics.md and each header's contract), a little above the measured
// maxima, so a broken coefficient fails here. Special values are checked exactly.
// KILN_VECMATH_DENSE=1 samples 16x more densely (for re-measuring the documented maxima).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ops/cpu/vecmath/gnu_vec_ops.h"
#include "ops/cpu/vecmath/vecmath.h"
#include "suite_passes.h"

namespace {

using LD = long double;
namespace vm = kiln::vecmath;

template <class T>
using Ops = vm::GnuVecOps<T, 64>;

// n elements (a multiple of the lane count) through one vecmath function.
template <class T>
using VecFn = void (*)(const T* in, T* out, size_t n);

template <class T, class Fn>
void run_vec(const T* in, T* out, size_t n, Fn fn) {
  Ops<T> o;
  for (size_t i = 0; i < n; i += Ops<T>::kLanes) o.store(out + i, fn(o, o.load(in + i)));
}

// Applies fn to every element of xs through the vector code.
template <class T>
std::vector<T> apply(VecFn<T> fn, const std::vector<T>& xs) {
  constexpr int L = Ops<T>::kLanes;
  std::vector<T> in(xs), out((xs.size() + L - 1) / L * L);
  in.resize(out.size(), T(0));
  fn(in.data(), out.data(), in.size());
  out.resize(xs.size());
  return out;
}

// |got - ref| in ulps of T at ref (ulps of the smallest normal binade below it; inf counts as
// the power of two past the largest finite value).
template <class T>
double ulp_err(T got, LD ref) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got) ? 0 : 1e30;
  const LD top = std::ldexp(LD(1), std::numeric_limits<T>::max_exponent);
  LD g = std::isinf(got) ? std::copysign(top, LD(got)) : LD(got);
  LD r = std::isinf(T(ref)) ? std::copysign(top, ref) : ref;
  if (r == g) return 0;
  int e = r == 0 ? std::numeric_limits<T>::min_exponent : std::ilogb(r) + 1;
  if (e < std::numeric_limits<T>::min_exponent) e = std::numeric_limits<T>::min_exponent;
  const LD ulp = std::ldexp(LD(1), e - std::numeric_limits<T>::digits);
  return double(std::fabs(g - r) / ulp);
}

struct Case {
  const char* name;
  VecFn<float> f32;
  VecFn<double> f64;
  LD (*ref)(LD);
  double bound32, bound64;  // documented max ulp
  double abs_k = 0;         // composites: + abs_k * eps * |x| (cancellation in 1 + erf/tanh)
  // x * f(x) composites: where f(x) is denormal its absolute error (ulps of the denormals) is
  // multiplied by |x|: + denorm_k * |x| ulp there.
  double denorm_k = 0;
};

LD gelu_ref(LD x) { return 0.5L * x * (1 + erfl(x * 0.70710678118654752440084436210484904L)); }
LD gelu_tanh_ref(LD x) {
  return 0.5L * x *
         (1 + tanhl(0.79788456080286535587989211986876373L * (x + 0.044715L * x * x * x)));
}
LD sigmoid_ref(LD x) { return 1 / (1 + expl(-x)); }
LD silu_ref(LD x) { return x / (1 + expl(-x)); }

#define KILN_VM_FN1(fn, T)                                                             \
  [](const T* in, T* out, size_t n) {                                                  \
    run_vec<T>(in, out, n, [](const Ops<T>& o, Ops<T>::F x) { return vm::fn(o, x); }); \
  }
#define KILN_VM_FN(fn) KILN_VM_FN1(fn, float), KILN_VM_FN1(fn, double)
std::vector<Case> cases() {
  return {
      {"exp", KILN_VM_FN(exp), expl, 1.5, 1.5},
      {"expm1", KILN_VM_FN(expm1), expm1l, 2.5, 2.5},
      {"log", KILN_VM_FN(log), logl, 1.5, 1.5},
      {"log1p", KILN_VM_FN(log1p), log1pl, 2, 2},
      {"tanh", KILN_VM_FN(tanh), tanhl, 3, 3},
      {"sigmoid", KILN_VM_FN(sigmoid), sigmoid_ref, 3, 3},
      {"silu", KILN_VM_FN(silu), silu_ref, 3.5, 3.5, 0, 1.0},
      {"erf", KILN_VM_FN(erf), erfl, 2, 2},
      {"sin", KILN_VM_FN(sin), sinl, 3, 3},  // whole range: exact reduction past 6000 / 1.5e6
      {"cos", KILN_VM_FN(cos), cosl, 3, 3},
      {"gelu", KILN_VM_FN(gelu), gelu_ref, 4, 4, 4},
      {"gelu_tanh", KILN_VM_FN(gelu_tanh), gelu_tanh_ref, 4, 4, 4},
  };
}

int density() {
  const char* v = std::getenv("KILN_VECMATH_DENSE");
  return v && *v == '1' ? 16 : 1;
}

// Every k-th float32 bit pattern, from a per-case offset, plus the special values.
std::vector<float> float_samples(uint32_t offset) {
  const uint32_t step = 1021 / density() | 1;  // odd: the samples hit every residue class
  std::vector<float> xs;
  xs.reserve((uint64_t(1) << 32) / step + 64);
  for (uint64_t b = offset % step; b < (uint64_t(1) << 32); b += step) {
    float x;
    uint32_t u = uint32_t(b);
    std::memcpy(&x, &u, 4);
    xs.push_back(x);
  }
  return xs;
}

// Log-uniform over every exponent of float64, both signs, plus a dense band around [-64, 64].
std::vector<double> double_samples(uint64_t seed) {
  std::mt19937_64 g(seed);
  const size_t n = size_t(1) << 21;
  std::vector<double> xs;
  xs.reserve(n * density());
  for (size_t i = 0; i < n * density(); ++i) {
    uint64_t b = g();
    if (i % 2 == 0) {  // uniform bit pattern: log-uniform magnitudes over all exponents
      double x;
      std::memcpy(&x, &b, 8);
      xs.push_back(x);
    } else {  // the interesting band: exponents -30..6 of both signs
      const double m = 1.0 + double(b >> 12) * 0x1p-52;
      const int e = int(b % 37) - 30;
      xs.push_back(std::ldexp((b & 2048) ? -m : m, e));
    }
  }
  return xs;
}

template <class T>
std::vector<T> specials() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),           -T(0),           L::infinity(),   -L::infinity(),
                      L::quiet_NaN(), -L::quiet_NaN(), L::denorm_min(), -L::denorm_min(),
                      L::min(),       -L::min(),       L::max(),        -L::max(),
                      T(1),           T(-1),           T(0.5),          T(2)};
  // exp/expm1 overflow and underflow thresholds, tanh/erf saturation, near -1 for log1p.
  for (double t : {88.72283935546875,
                   88.7228317260742,
                   -87.33654022216797,
                   -103.27892,
                   -103.97208,
                   709.782712893384,
                   -708.3964185322641,
                   -744.4400719213812,
                   -745.1332191019412,
                   9.010913,
                   19.06155,
                   3.9192059,
                   5.921587,
                   -0.99999994,
                   -0.9999999999999999,
                   1e-30,
                   -1e-30,
                   1e-300,
                   1e-8,
                   -1e-8,
                   3.0e38,
                   1e300,
                   6381956970095103.0 * 0x1p797,  // float64 closest to a multiple of pi/2
                   16367173.0 * 0x1p72,           // a float32 very near one (Muller)
                   6000.0,
                   1.5e6,
                   1e22})
    for (double s : {1.0, -1.0}) {
      T x = T(t * s);
      v.push_back(x);
      v.push_back(std::nextafter(x, L::infinity()));
      v.push_back(std::nextafter(x, -L::infinity()));
    }
  return v;
}

template <class T>
void check_case(const Case& c, VecFn<T> fn, double bound, std::vector<T> xs) {
  for (T s : specials<T>()) xs.push_back(s);
  std::vector<T> got = apply<T>(fn, xs);
  double worst = 0;
  T worst_x = 0;
  int reported = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const LD x = xs[i];
    const LD ref = c.ref(x);
    double err = ulp_err<T>(got[i], ref);
    double b = bound;
    if (c.abs_k > 0 && std::isfinite(x) && std::isfinite(got[i])) {
      int e = ref == 0 ? std::numeric_limits<T>::min_exponent : std::ilogb(ref) + 1;
      if (e < std::numeric_limits<T>::min_exponent) e = std::numeric_limits<T>::min_exponent;
      const LD ulp = std::ldexp(LD(1), e - std::numeric_limits<T>::digits);
      b += double(c.abs_k * std::numeric_limits<T>::epsilon() * std::fabs(x) / ulp);
    }
    if (c.denorm_k > 0 && std::isfinite(x) && x != 0 &&
        std::fabs(ref / x) < std::numeric_limits<T>::min()) {
      b += double(c.denorm_k * std::fabs(x));
    }
    // The reported maximum is the part of the error beyond the allowance (the plain ulp bound).
    if (err - (b - bound) > worst) worst = err - (b - bound), worst_x = xs[i];
    if (err > b && reported++ < 5)
      ADD_FAILURE() << c.name << " " << (sizeof(T) == 4 ? "float32" : "float64")
                    << " x = " << std::hexfloat << xs[i] << " got " << got[i] << " want "
                    << double(ref) << std::defaultfloat << " (" << err << " ulp > " << b << ")";
    // Zero signs: where the reference is an exact zero, the sign must match (odd functions).
    if (ref == 0 && got[i] == 0 && x == 0) {
      EXPECT_EQ(std::signbit(got[i]), std::signbit(ref)) << c.name << " at " << double(x);
    }
  }
  std::printf("  %-10s %s max %.3f ulp at %a (bound %.2f, %zu samples)\n", c.name,
              sizeof(T) == 4 ? "float32" : "float64", worst, double(worst_x), bound, xs.size());
}

TEST(VecmathUlp, Float32WholeRange) {
  KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("vector math");
  std::vector<Case> cs = cases();
  std::vector<std::thread> ts;
  for (size_t i = 0; i < cs.size(); ++i) {
    ts.emplace_back(
        [&, i] { check_case<float>(cs[i], cs[i].f32, cs[i].bound32, float_samples(i)); });
    if (ts.size() == 2) {
      for (auto& t : ts) t.join();
      ts.clear();
    }
  }
  for (auto& t : ts) t.join();
}

TEST(VecmathUlp, Float64WholeRange) {
  KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("vector math");
  std::vector<Case> cs = cases();
  std::vector<std::thread> ts;
  for (size_t i = 0; i < cs.size(); ++i) {
    ts.emplace_back(
        [&, i] { check_case<double>(cs[i], cs[i].f64, cs[i].bound64, double_samples(i + 1)); });
    if (ts.size() == 2) {
      for (auto& t : ts) t.join();
      ts.clear();
    }
  }
  for (auto& t : ts) t.join();
}

// pow: pairs (x, y) over the whole range, against powl.
//  - every k-th positive finite bit pattern of x, each with y = t / log(x) for t uniform over
//    a little more than the result's range (so results span denormals to overflow) and with a
//    random small y;
//  - x near 1 (|x - 1| down to 2^-24 / 2^-53) with y up to the overflow threshold;
//  - negative x with integer y (the sign rule), and odd/even integers near 2^24 / 2^53;
//  - random bit patterns for both (mostly 0, inf and NaN results: the special cases).
template <class T>
std::vector<std::pair<T, T>> pow_samples() {
  using L = std::numeric_limits<T>;
  std::mt19937_64 g(sizeof(T));
  auto unit = [&] { return double(g() >> 11) * 0x1p-53; };
  const double tmax = sizeof(T) == 4 ? 110 : 760;
  std::vector<std::pair<T, T>> v;
  const uint64_t patterns = sizeof(T) == 4 ? (uint64_t(1) << 31) : 0;
  if constexpr (sizeof(T) == 4) {
    const uint32_t step = 2039 / density() | 1;
    for (uint64_t b = 1; b < patterns; b += step) {
      float x;
      const uint32_t u = uint32_t(b);
      std::memcpy(&x, &u, 4);
      if (!std::isfinite(x)) continue;
      const double lx = std::log(double(x));
      if (lx != 0) v.push_back({x, T((unit() * 2 - 1) * tmax / lx)});
      v.push_back({x, T((unit() * 2 - 1) * 8)});
    }
  } else {
    for (size_t i = 0; i < (size_t(1) << 20) * density(); ++i) {
      const uint64_t b = g() & 0x7fefffffffffffffULL;  // finite, positive
      double x;
      std::memcpy(&x, &b, 8);
      if (x == 0) continue;
      const double lx = std::log(x);
      if (lx != 0) v.push_back({x, (unit() * 2 - 1) * tmax / lx});
      v.push_back({x, (unit() * 2 - 1) * 8});
    }
  }
  const int eps_bits = L::digits;
  for (int i = 0; i < 200000 * density(); ++i) {
    const double d = std::ldexp(unit() * 2 - 1, -int(g() % eps_bits));
    const T x = T(1 + d);
    const double lx = std::log(double(x));
    if (lx != 0) v.push_back({x, T((unit() * 2 - 1) * tmax / lx)});
  }
  for (int i = 0; i < 200000 * density(); ++i) {
    const T x = T(-std::ldexp(1 + unit(), int(g() % 40) - 20));
    const double n = std::floor(tmax / std::fabs(std::log(-double(x))) + 1);
    v.push_back({x, T(std::floor((unit() * 2 - 1) * std::min(n, 1e6)))});
  }
  const T two_p = std::ldexp(T(1), eps_bits - 1);
  for (T y : {two_p - 1, two_p, two_p + 1, 2 * two_p, 2 * two_p - 2, T(3), T(-3), T(4)})
    for (T x : {T(-1), T(-1) - L::epsilon(), T(-1) + L::epsilon() / 2, T(-0.5), T(-2), T(-1e-30)})
      v.push_back({x, y}), v.push_back({x, -y});
  for (int i = 0; i < 200000 * density(); ++i) {
    T x, y;
    uint64_t a = g(), b = g();
    if constexpr (sizeof(T) == 4) {
      uint32_t ua = uint32_t(a), ub = uint32_t(b);
      std::memcpy(&x, &ua, 4);
      std::memcpy(&y, &ub, 4);
    } else {
      std::memcpy(&x, &a, 8);
      std::memcpy(&y, &b, 8);
    }
    v.push_back({x, y});
  }
  return v;
}

template <class T>
T pow_vec1(T x, T y) {  // one lane of the vector code
  return vm::apply_scalar2(x, y, [](const auto& o, auto a, auto b) { return vm::pow(o, a, b); });
}

template <class T>
void check_pow(double bound) {
  const std::vector<std::pair<T, T>> xy = pow_samples<T>();
  constexpr int L = Ops<T>::kLanes;
  std::vector<T> xs, ys, got;
  for (auto [x, y] : xy) xs.push_back(x), ys.push_back(y);
  const size_t n = (xs.size() + L - 1) / L * L;
  xs.resize(n, T(1));
  ys.resize(n, T(1));
  got.resize(n);
  Ops<T> o;
  for (size_t i = 0; i < n; i += L)
    o.store(got.data() + i, vm::pow(o, o.load(xs.data() + i), o.load(ys.data() + i)));
  double worst = 0;
  T wx = 0, wy = 0;
  int reported = 0;
  for (size_t i = 0; i < xy.size(); ++i) {
    const LD ref = powl(LD(xs[i]), LD(ys[i]));
    const double err = ulp_err<T>(got[i], ref);
    if (err > worst) worst = err, wx = xs[i], wy = ys[i];
    const bool sign_ok = std::isnan(ref) || std::signbit(got[i]) == std::signbit(ref);
    if ((err > bound || !sign_ok) && reported++ < 8)
      ADD_FAILURE() << "pow " << (sizeof(T) == 4 ? "float32" : "float64")
                    << " x = " << std::hexfloat << xs[i] << " y = " << ys[i] << " got " << got[i]
                    << " want " << double(ref) << std::defaultfloat << " (" << err << " ulp)";
  }
  std::printf("  %-10s %s max %.3f ulp at x = %a, y = %a (bound %.2f, %zu samples)\n", "pow",
              sizeof(T) == 4 ? "float32" : "float64", worst, double(wx), double(wy), bound,
              xy.size());
}

// Every special case of IEEE 754 / C99 Annex F pow, exactly (glibc's pow gets them right):
// the value, the sign of zeros and infinities, NaN for NaN.
template <class T>
void check_pow_specials() {
  using L = std::numeric_limits<T>;
  const T two_p = std::ldexp(T(1), L::digits - 1);
  const std::vector<T> vals = {T(0),
                               -T(0),
                               T(1),
                               T(-1),
                               T(0.5),
                               T(-0.5),
                               T(2),
                               T(-2),
                               T(3),
                               T(-3),
                               T(2.5),
                               T(-2.5),
                               two_p,
                               -two_p,
                               two_p + 1,
                               -two_p - 1,
                               2 * two_p,
                               L::max(),
                               -L::max(),
                               L::min(),
                               L::denorm_min(),
                               -L::denorm_min(),
                               L::infinity(),
                               -L::infinity(),
                               L::quiet_NaN(),
                               T(1) + L::epsilon(),
                               T(1) - L::epsilon()};
  int bad = 0;
  for (T x : vals)
    for (T y : vals) {
      const T got = pow_vec1(x, y), want = std::pow(x, y);
      const bool ok = std::isnan(want) ? std::isnan(got)
                                       : (got == want && std::signbit(got) == std::signbit(want)) ||
                                             ulp_err<T>(got, powl(LD(x), LD(y))) <= 1;
      if (!ok && bad++ < 10)
        ADD_FAILURE() << "pow(" << x << ", " << y << ") = " << got << ", want " << want;
    }
}

TEST(VecmathUlp, PowWholeRange) {
  KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("vector math");
  std::thread t32([] { check_pow<float>(1.0); });
  check_pow<double>(1.0);
  t32.join();
}

TEST(VecmathUlp, PowSpecialValues) {
  check_pow_specials<float>();
  check_pow_specials<double>();
}

}  // namespace
