// Pointwise ops against scalar references computed here in long double from the input values,
// on contiguous, transposed, sliced-with-step, expanded, broadcast, 0-dim and zero-size inputs.
//
// Tolerances (measured in ulps of the output dtype against the exact long double reference):
//   exactly rounded ops (neg abs floor ceil round sign square relu sqrt reciprocal add sub mul
//   div maximum minimum clamp): 0.5 ulp, i.e. the correctly rounded result;
//   kiln's vector math (ops/cpu/vecmath/, docs/numerics.md), the documented bounds: exp log 1.5
//   ulp, log1p erf 2, expm1 2.5, sin cos tanh sigmoid 3, silu 3.5, pow 1 (but 2, 0.5 and 1 as
//   exponents: x*x, sqrt, x, 0.5 ulp); rsqrt: 4 ulp; gelu/gelu_tanh: 4 ulp + 4 eps * |x| (1 +
//   erf/tanh cancels for negative x, so the error is absolute in x there). Integer and Bool
//   results: exact.
#include <cpuid.h>

#include <atomic>
#include <thread>

#include "core_test_util.h"
#include "isa_util.h"
#include "op_matrix.h"
#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/pointwise_table.h"
#include "runtime/config.h"
#include "runtime/parallel.h"

using namespace kiln;
using namespace kiln::testutil;
using LD = long double;

namespace {

const std::vector<double> kA = {-3.7, -2.5, -1.5, -0.5, -0.0,   0.5,
                                1.5,  2.5,  3.25, 7.9,  -10.25, 0.1};
const std::vector<double> kB = {1.25, -2, 3, 0.5, -0.75, 2, 4, -1, 0.3, 5, 2, -3};

LD round_half_even(LD x) {
  LD f = std::floor(x), d = x - f;
  if (d > 0.5L) return f + 1;
  if (d < 0.5L) return f;
  return std::fmod(f, 2.0L) == 0 ? f : f + 1;
}

// Rounds v to what dtype d can hold (the input of the reference is the stored input value).
LD stored(double v, DType d) {
  return visit_dtype(d, [&]<class T>(TypeTag<T>) { return static_cast<LD>(static_cast<T>(v)); });
}

// Compares got (any dtype) with the reference; for floats err <= ulps + abs_k * eps * |x|.
void check(const Tensor& got, const std::vector<LD>& ref, double ulps, const std::string& ctx,
           const std::vector<LD>& xs = {}, double abs_k = 0) {
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), ref.size()) << ctx;
  for (size_t i = 0; i < g.size(); ++i) {
    visit_dtype(got.dtype(), [&]<class T>(TypeTag<T>) {
      if constexpr (std::is_floating_point_v<T>) {
        T gv = static_cast<T>(g[i]);
        double err = ulp_err<T>(gv, ref[i]);
        double bound = ulps;
        if (abs_k > 0 && !std::isnan(gv)) {
          LD ulp = std::nextafter(std::fabs(static_cast<T>(ref[i])),
                                  std::numeric_limits<T>::infinity()) -
                   std::fabs(static_cast<T>(ref[i]));
          if (ulp == 0 || static_cast<T>(ref[i]) == 0) ulp = std::numeric_limits<T>::denorm_min();
          bound += static_cast<double>(abs_k * std::numeric_limits<T>::epsilon() *
                                       std::fabs(xs[i]) / ulp);
        }
        EXPECT_LE(err, bound) << ctx << " at " << i << ": got " << gv << " want "
                              << static_cast<double>(ref[i]);
      } else {
        EXPECT_EQ(g[i], static_cast<double>(ref[i])) << ctx << " at " << i;
      }
    });
  }
}

enum class Kind { Floating, Numeric, Any, BoolOut, ToBool };

struct Unary {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<LD(LD)> ref;
  Kind kind;
  double ulps;
  double abs_k = 0;
};

LD gelu_ref(LD x) { return 0.5L * x * (1 + std::erf(x / std::sqrt(2.0L))); }
LD gelu_tanh_ref(LD x) {
  return 0.5L * x *
         (1 + std::tanh(std::sqrt(2.0L / 3.14159265358979323846264338327950288L) *
                        (x + 0.044715L * x * x * x)));
}

std::vector<Unary> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return -x; }, [](LD x) { return -x; }, Kind::Numeric, 0.5},
      {"abs", [](const Tensor& x) { return abs(x); }, [](LD x) { return std::fabs(x); },
       Kind::Numeric, 0.5},
      {"exp", [](const Tensor& x) { return exp(x); }, [](LD x) { return std::exp(x); },
       Kind::Floating, 1.5},
      {"log", [](const Tensor& x) { return log(x); }, [](LD x) { return std::log(x); },
       Kind::Floating, 1.5},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](LD x) { return std::log1p(x); },
       Kind::Floating, 2},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](LD x) { return std::expm1(x); },
       Kind::Floating, 2.5},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](LD x) { return std::sqrt(x); },
       Kind::Floating, 0.5},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](LD x) { return 1 / std::sqrt(x); },
       Kind::Floating, 4},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](LD x) { return 1 / x; },
       Kind::Floating, 0.5},
      {"sin", [](const Tensor& x) { return sin(x); }, [](LD x) { return std::sin(x); },
       Kind::Floating, 3},
      {"cos", [](const Tensor& x) { return cos(x); }, [](LD x) { return std::cos(x); },
       Kind::Floating, 3},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](LD x) { return std::tanh(x); },
       Kind::Floating, 3},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](LD x) { return 1 / (1 + std::exp(-x)); }, Kind::Floating, 3},
      {"relu", [](const Tensor& x) { return relu(x); }, [](LD x) { return x < 0 ? 0 : x; },
       Kind::Numeric, 0.5},
      {"silu", [](const Tensor& x) { return silu(x); }, [](LD x) { return x / (1 + std::exp(-x)); },
       Kind::Floating, 3.5},
      {"erf", [](const Tensor& x) { return erf(x); }, [](LD x) { return std::erf(x); },
       Kind::Floating, 2},
      {"floor", [](const Tensor& x) { return floor(x); }, [](LD x) { return std::floor(x); },
       Kind::Numeric, 0.5},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](LD x) { return std::ceil(x); },
       Kind::Numeric, 0.5},
      {"round", [](const Tensor& x) { return round(x); }, round_half_even, Kind::Numeric, 0.5},
      {"sign", [](const Tensor& x) { return sign(x); },
       [](LD x) -> LD { return x > 0 ? 1 : (x < 0 ? -1 : 0); }, Kind::Any, 0.5},
      {"square", [](const Tensor& x) { return square(x); }, [](LD x) { return x * x; },
       Kind::Numeric, 0.5},
      {"isnan", [](const Tensor& x) { return isnan(x); }, [](LD x) -> LD { return x != x; },
       Kind::BoolOut, 0},
      {"logical_not", [](const Tensor& x) { return logical_not(x); },
       [](LD x) -> LD { return x == 0; }, Kind::ToBool, 0},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_ref, Kind::Floating, 4, 4},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, gelu_tanh_ref, Kind::Floating,
       4, 4},
      {"pow2", [](const Tensor& x) { return pow(x, 2); }, [](LD x) { return x * x; }, Kind::Numeric,
       0.5},
      {"pow3", [](const Tensor& x) { return pow(x, 3); }, [](LD x) { return x * x * x; },
       Kind::Numeric, 1},
      {"pow0.5", [](const Tensor& x) { return x.pow(0.5); }, [](LD x) { return std::sqrt(x); },
       Kind::Floating, 0.5},
      {"pow-1.5", [](const Tensor& x) { return x.pow(-1.5); },
       [](LD x) { return std::pow(x, -1.5L); }, Kind::Floating, 1},
      {"clamp", [](const Tensor& x) { return clamp(x, -2, 3); },
       [](LD x) -> LD { return x < -2 ? -2 : (x > 3 ? 3 : x); }, Kind::Numeric, 0.5},
  };
}

// The dtype a unary op gives for input dtype d, or nullopt when it must raise.
std::optional<DType> unary_out(Kind k, DType d, const std::string& name) {
  switch (k) {
    case Kind::Floating:
      return is_floating(d) ? d : kFloat32;
    case Kind::Numeric:
      if (d == kBool)
        return name == "square" || name == "pow2" || name == "pow3" || name == "clamp"
                   ? std::optional<DType>(kInt64)
                   : std::nullopt;
      return d;
    case Kind::Any:
      return d;
    default:
      return kBool;
  }
}

}  // namespace

TEST(Pointwise, UnaryEveryDTypeAndLayout) {
  for (const Unary& op : unary_cases()) {
    for (DType d : kAllDTypes) {
      auto want = unary_out(op.kind, d, op.name);
      std::string base = std::string(op.name) + " " + dname(d);
      if (!want) {
        Tensor x = make(kA, {3, 4}, d);
        expect_error([&] { op.fn(x); }, {"Bool"});
        continue;
      }
      // The compute dtype: Float32 for ints into float ops, else the output (Bool ops: input).
      DType compute = (op.kind == Kind::Floating) ? *want : d;
      if (op.kind == Kind::Numeric && d == kBool) compute = kInt64;
      for (const Layout& l : layouts(kA, 3, 4, d)) {
        std::string ctx = base + " " + l.name;
        Tensor y = kiln::testing::run_in_all_modes(ctx, [&] { return op.fn(l.t); });
        EXPECT_EQ(y.dtype(), *want) << ctx;
        EXPECT_EQ(y.sizes(), (Shape{3, 4})) << ctx;
        EXPECT_TRUE(y.is_contiguous()) << ctx;
        std::vector<LD> ref, xs;
        for (double v : l.vals) {
          LD x = stored(stored(v, d), compute);
          xs.push_back(x);
          ref.push_back(op.ref(x));
        }
        check(y, ref, op.ulps, ctx, xs, op.abs_k);
      }
      // 0-dim and zero-size.
      Tensor s = make({kA[0]}, {}, d);
      Tensor ys = op.fn(s);
      EXPECT_EQ(ys.dim(), 0) << base;
      LD x0 = stored(stored(kA[0], d), compute);
      check(ys, {op.ref(x0)}, op.ulps, base + " 0-dim", {x0}, op.abs_k);
      Tensor z = make({}, {0, 4}, d);
      Tensor yz = op.fn(z);
      EXPECT_EQ(yz.sizes(), (Shape{0, 4})) << base;
      EXPECT_EQ(yz.dtype(), *want) << base;
    }
  }
}

TEST(Pointwise, UnaryNaNAndInf) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  for (DType d : {kFloat32, kFloat64}) {
    Tensor x = make({nan, inf, -inf, 1}, {4}, d);
    for (const Unary& op : unary_cases()) {
      std::vector<LD> ref;
      for (double v : {nan, inf, -inf, 1.0}) ref.push_back(op.ref(v));
      if (std::string(op.name) == "sign") ref[0] = 0;  // PyTorch: sign(NaN) == 0
      check(op.fn(x), ref, op.ulps, std::string(op.name) + " nan/inf " + dname(d));
    }
    // NaN propagates through relu, clamp, maximum, minimum (either side).
    Tensor n = make({nan, nan}, {2}, d), o = make({1, -1}, {2}, d);
    for (const Tensor& r :
         {relu(n), clamp(n, 0, 1), maximum(n, o), maximum(o, n), minimum(n, o), minimum(o, n)})
      for (double v : values(r)) EXPECT_TRUE(std::isnan(v)) << dname(d);
  }
}

TEST(Pointwise, RoundHalfToEven) {
  for (DType d : {kFloat32, kFloat64}) {
    Tensor x = make({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 2.4999, -3.5000001}, {10}, d);
    std::vector<double> got = values(round(x));
    EXPECT_EQ(got, (std::vector<double>{-2, -2, -0.0, 0, 2, 2, 4, 4, 2, -4})) << dname(d);
    EXPECT_TRUE(std::signbit(got[2]));  // round(-0.5) is -0
  }
}

// ---- binary ----

struct Binary {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<LD(LD, LD)> ref;
  enum { Same, FloatOut, NoBool, BoolOut, Logical } kind;
  double ulps;
  // Scalar forms (null when the op has none): t op s and s op t.
  std::function<Tensor(const Tensor&, const Scalar&)> right = nullptr;
  std::function<Tensor(const Scalar&, const Tensor&)> left = nullptr;
};

LD int_pow_ref(LD b, LD e) {
  if (e < 0) return b == 1 ? 1 : (b == -1 ? (std::fmod(-e, 2.0L) != 0 ? -1 : 1) : 0);
  LD r = 1;
  for (int i = 0; i < e; ++i) r *= b;
  return r;
}

std::vector<Binary> binary_cases() {
  using B = Binary;
  return {
      {"add", [](auto& a, auto& b) { return a + b; }, [](LD a, LD b) { return a + b; }, B::Same,
       0.5, [](auto& a, auto& s) { return a + s; }, [](auto& s, auto& a) { return s + a; }},
      {"add_alpha2", [](auto& a, auto& b) { return add(a, b, 2); },
       [](LD a, LD b) { return a + 2 * b; }, B::Same, 0.5},
      {"sub", [](auto& a, auto& b) { return a - b; }, [](LD a, LD b) { return a - b; }, B::NoBool,
       0.5, [](auto& a, auto& s) { return a - s; }, [](auto& s, auto& a) { return s - a; }},
      {"sub_alpha0.5", [](auto& a, auto& b) { return sub(a, b, 0.5); },
       [](LD a, LD b) { return a - b / 2; }, B::FloatOut, 0.5},
      {"mul", [](auto& a, auto& b) { return a * b; }, [](LD a, LD b) { return a * b; }, B::Same,
       0.5, [](auto& a, auto& s) { return a * s; }, [](auto& s, auto& a) { return s * a; }},
      {"div", [](auto& a, auto& b) { return a / b; }, [](LD a, LD b) { return a / b; }, B::FloatOut,
       0.5, [](auto& a, auto& s) { return a / s; }, [](auto& s, auto& a) { return s / a; }},
      {"pow", [](auto& a, auto& b) { return pow(a, b); }, [](LD a, LD b) { return std::pow(a, b); },
       B::NoBool, 1, [](auto& a, auto& s) { return pow(a, s); },
       [](auto& s, auto& a) { return pow(s, a); }},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); },
       [](LD a, LD b) { return a < b ? b : a; }, B::Same, 0},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); },
       [](LD a, LD b) { return b < a ? b : a; }, B::Same, 0},
      {"eq", [](auto& a, auto& b) { return a == b; }, [](LD a, LD b) -> LD { return a == b; },
       B::BoolOut, 0, [](auto& a, auto& s) { return a == s; }},
      {"ne", [](auto& a, auto& b) { return a != b; }, [](LD a, LD b) -> LD { return a != b; },
       B::BoolOut, 0, [](auto& a, auto& s) { return a != s; }},
      {"lt", [](auto& a, auto& b) { return a < b; }, [](LD a, LD b) -> LD { return a < b; },
       B::BoolOut, 0, [](auto& a, auto& s) { return a < s; }},
      {"le", [](auto& a, auto& b) { return a <= b; }, [](LD a, LD b) -> LD { return a <= b; },
       B::BoolOut, 0, [](auto& a, auto& s) { return a <= s; }},
      {"gt", [](auto& a, auto& b) { return a > b; }, [](LD a, LD b) -> LD { return a > b; },
       B::BoolOut, 0, [](auto& a, auto& s) { return a > s; }},
      {"ge", [](auto& a, auto& b) { return a >= b; }, [](LD a, LD b) -> LD { return a >= b; },
       B::BoolOut, 0, [](auto& a, auto& s) { return a >= s; }},
      {"logical_and", [](auto& a, auto& b) { return logical_and(a, b); },
       [](LD a, LD b) -> LD { return a != 0 && b != 0; }, B::Logical, 0},
      {"logical_or", [](auto& a, auto& b) { return logical_or(a, b); },
       [](LD a, LD b) -> LD { return a != 0 || b != 0; }, B::Logical, 0},
  };
}

// (output dtype, compute dtype) for inputs promoted to p; nullopt when the op must raise.
std::optional<std::pair<DType, DType>> binary_out(const Binary& op, DType p) {
  switch (op.kind) {
    case Binary::Same:
      return std::pair{p, p};
    case Binary::FloatOut: {
      DType f = is_floating(p) ? p : kFloat32;
      return std::pair{f, f};
    }
    case Binary::NoBool:
      if (p == kBool) return std::nullopt;
      return std::pair{p, p};
    case Binary::BoolOut:
      return std::pair{kBool, p};
    default:
      return std::pair{kBool, kBool};
  }
}

LD binary_ref(const Binary& op, LD a, LD b, DType compute) {
  if (std::string(op.name) == "pow" && !is_floating(compute)) return int_pow_ref(a, b);
  if (compute == kBool) {  // Bool arithmetic: add is or, mul is and, max/min likewise
    LD r = op.ref(a != 0, b != 0);
    return r != 0;
  }
  return op.ref(a, b);
}

TEST(Pointwise, BinaryEveryDTypeAndLayout) {
  for (const Binary& op : binary_cases()) {
    for (DType d : kAllDTypes) {
      std::string base = std::string(op.name) + " " + dname(d);
      auto oc = binary_out(op, d);
      if (std::string(op.name) == "sub_alpha0.5" && !is_floating(d)) {
        // PyTorch: a floating alpha is an error for integral (and Bool) inputs.
        Tensor x = make(kA, {3, 4}, d);
        expect_error([&] { op.fn(x, x); }, {"sub", "alpha"});
        continue;
      }
      if (!oc) {
        Tensor x = make(kA, {3, 4}, d);
        expect_error([&] { op.fn(x, x); }, {"Bool"});
        continue;
      }
      auto [out_d, compute] = *oc;
      Tensor a = make(kA, {3, 4}, d);
      std::vector<LD> av;
      for (double v : kA) av.push_back(stored(stored(v, d), compute));
      auto run = [&](const Tensor& b, const std::vector<double>& bvals, bool swap,
                     const std::string& ctx) {
        Tensor y =
            kiln::testing::run_in_all_modes(ctx, [&] { return swap ? op.fn(b, a) : op.fn(a, b); });
        EXPECT_EQ(y.dtype(), out_d) << ctx;
        ASSERT_EQ(y.sizes(), (Shape{3, 4})) << ctx;
        std::vector<LD> ref;
        for (size_t i = 0; i < 12; ++i) {
          LD bv = stored(stored(bvals[i], d), compute);
          ref.push_back(swap ? binary_ref(op, bv, av[i], compute)
                             : binary_ref(op, av[i], bv, compute));
        }
        check(y, ref, op.ulps, ctx);
      };
      for (const Layout& l : layouts(kB, 3, 4, d)) {
        run(l.t, l.vals, false, base + " b " + l.name);
        run(l.t, l.vals, true, base + " a " + l.name);
      }
      // Broadcasting a [4] row and a [3, 1] column; a 0-dim tensor.
      std::vector<double> row(kB.begin(), kB.begin() + 4), rowv, colv;
      for (int i = 0; i < 3; ++i) rowv.insert(rowv.end(), row.begin(), row.end());
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) colv.push_back(kB[i]);
      run(make(row, {4}, d), rowv, false, base + " bcast row");
      run(make({kB[0], kB[1], kB[2]}, {3, 1}, d), colv, true, base + " bcast col");
      run(make({kB[1]}, {}, d), std::vector<double>(12, kB[1]), false, base + " 0-dim");
      // Zero-size broadcasting with a [1] and a [0, 1].
      Tensor z = op.fn(make({}, {0, 1}, d), make({1, 2, 3}, {3}, d));
      EXPECT_EQ(z.sizes(), (Shape{0, 3})) << base;
      EXPECT_EQ(z.dtype(), out_d) << base;
      // Two 0-dim tensors give a 0-dim result.
      EXPECT_EQ(op.fn(make({2}, {}, d), make({1}, {}, d)).dim(), 0) << base;
    }
  }
}

TEST(Pointwise, BinaryWithScalars) {
  const Scalar scalars[] = {Scalar(3), Scalar(0.5), Scalar(true)};
  for (const Binary& op : binary_cases()) {
    if (!op.right) continue;
    for (DType d : {kInt32, kInt64, kFloat32, kFloat64}) {
      for (const Scalar& s : scalars) {
        // Promotion: an int scalar keeps an int/float tensor's dtype; a float scalar keeps a
        // float tensor's and turns an int tensor into Float32; a bool scalar keeps it.
        DType p = (s.is_floating() && !is_floating(d)) ? kFloat32 : d;
        auto oc = binary_out(op, p);
        ASSERT_TRUE(oc);
        auto [out_d, compute] = *oc;
        LD sv = s.is_floating() ? stored(s.to_double(), compute) : static_cast<LD>(s.to_int());
        std::string ctx =
            std::string(op.name) + " " + dname(d) + " scalar " + std::to_string(s.to_double());
        for (const Layout& l : layouts(kA, 3, 4, d)) {
          std::vector<LD> rr, rl;
          for (double v : l.vals) {
            LD x = stored(stored(v, d), compute);
            rr.push_back(binary_ref(op, x, sv, compute));
            rl.push_back(binary_ref(op, sv, x, compute));
          }
          Tensor yr = kiln::testing::run_in_all_modes(ctx + " right " + l.name,
                                                      [&] { return op.right(l.t, s); });
          EXPECT_EQ(yr.dtype(), out_d) << ctx;
          check(yr, rr, op.ulps, ctx + " right " + l.name);
          if (op.left) {
            Tensor yl = kiln::testing::run_in_all_modes(ctx + " left " + l.name,
                                                        [&] { return op.left(s, l.t); });
            EXPECT_EQ(yl.dtype(), out_d) << ctx;
            check(yl, rl, op.ulps, ctx + " left " + l.name);
          }
        }
      }
    }
  }
}

TEST(Pointwise, WhereAndMaskedFill) {
  std::vector<double> cond = {1, 0, 0, 1};
  for (DType d : kAllDTypes) {
    for (const Layout& l : layouts(kA, 3, 4, d)) {
      Tensor c = make(cond, {4}, kBool);  // broadcast over rows
      Tensor other = make({-1}, {}, d);   // 0-dim
      Tensor y =
          kiln::testing::run_in_all_modes("where " + l.name, [&] { return where(c, l.t, other); });
      EXPECT_EQ(y.dtype(), d);
      std::vector<double> want;
      for (size_t i = 0; i < 12; ++i)
        want.push_back(cond[i % 4] ? stored(l.vals[i], d) : stored(-1, d));
      EXPECT_EQ(values(y), want) << dname(d) << " " << l.name;
      Tensor m = kiln::testing::run_in_all_modes("masked_fill " + l.name,
                                                 [&] { return masked_fill(l.t, c, 5); });
      std::vector<double> wm;
      for (size_t i = 0; i < 12; ++i)
        wm.push_back(cond[i % 4] ? stored(5, d) : stored(l.vals[i], d));
      EXPECT_EQ(values(m), wm) << dname(d) << " " << l.name;
      EXPECT_EQ(m.dtype(), d);
    }
  }
  // where promotes its two value operands; Float32 + Int64 -> Float32.
  Tensor c = make({1, 0}, {2}, kBool);
  Tensor y = where(c, make({1, 2}, {2}, kInt64), make({0.5, 0.25}, {2}, kFloat32));
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_EQ(values(y), (std::vector<double>{1, 0.25}));
  // Zero-size and 0-dim.
  EXPECT_EQ(where(make({}, {0}, kBool), make({1}, {}, kFloat32), make({2}, {}, kFloat32)).sizes(),
            (Shape{0}));
  EXPECT_EQ(values(masked_fill(make({3}, {}, kFloat32), make({1}, {}, kBool), 7.5)),
            (std::vector<double>{7.5}));
}

TEST(Pointwise, Errors) {
  Tensor a = make(kA, {3, 4}, kFloat32), b = make({1, 2, 3}, {3}, kFloat32);
  expect_error([&] { add(a, b); }, {"add", "[3, 4]", "[3]"});
  expect_error([&] { maximum(a, b); }, {"maximum", "[3, 4]", "[3]"});
  expect_error([&] { a == b; }, {"eq", "[3, 4]", "[3]"});
  Tensor bl = make({1, 0}, {2}, kBool);
  expect_error([&] { bl - bl; }, {"sub", "Bool"});
  expect_error([&] { -bl; }, {"neg", "Bool"});
  Tensor i = make({1, 2}, {2}, kInt32);
  expect_error([&] { pow(i, -2); }, {"pow", "negative"});
  expect_error([&] { where(i, a, a); }, {"where", "Bool"});
  expect_error([&] { where(bl, a, a); }, {"where", "[2]", "[3, 4]"});
  expect_error([&] { masked_fill(a, i, 1); }, {"masked_fill", "Bool"});
  expect_error(
      [&] {
        b.masked_fill_(make({1, 0, 1, 0, 1, 0}, {2, 3}, kBool), 1);  // out of place broadcasts
      },
      {"masked_fill", "[2, 3]", "[3]"});
  expect_error([&] { gelu(a, "fast"); }, {"gelu", "fast"});
  Tensor u;
  expect_error([&] { add(u, a); }, {"add", "undefined"});
  expect_error([&] { add(a, u); }, {"add", "undefined"});
  expect_error([&] { exp(u); }, {"exp", "undefined"});
  expect_error([&] { where(bl, u, a); }, {"where", "undefined"});
}

// ---- parallel path ----

TEST(Pointwise, ParallelEqualsSerial) {
  const int64_t n = 1000, m = 1200;  // 1.2e6 elements > kParallelGrain
  ASSERT_GT(n * m, kParallelGrain * 8);
  std::vector<double> av(n * m), bv(m);
  for (int64_t i = 0; i < n * m; ++i) av[i] = std::sin(0.001 * i) * 10;
  for (int64_t j = 0; j < m; ++j) bv[j] = 0.5 + 0.001 * j;
  Tensor a = make(av, {m, n}, kFloat32).t();  // transposed: [n, m], non-contiguous
  Tensor b = make(bv, {m}, kFloat32);         // broadcast row
  int saved = config().num_threads;
  auto run = [&] { return std::vector<Tensor>{a * b + 1, exp(a), a.slice(1, 0, m, 3).tanh()}; };
  std::vector<Tensor> par = run();
  set_num_threads(1);
  std::vector<Tensor> ser = run();
  set_num_threads(saved);
  for (size_t k = 0; k < par.size(); ++k) {
    ASSERT_EQ(par[k].sizes(), ser[k].sizes());
    std::vector<float> p = par[k].to_vector<float>(), s = ser[k].to_vector<float>();
    EXPECT_EQ(0, std::memcmp(p.data(), s.data(), p.size() * sizeof(float))) << k;
  }
  // Against the scalar reference, element by element (a sample of rows).
  std::vector<float> got = par[0].to_vector<float>();
  for (int64_t i = 0; i < n; i += 97)
    for (int64_t j = 0; j < m; ++j) {
      float x = static_cast<float>(av[j * n + i]);
      ASSERT_EQ(got[i * m + j], (x * static_cast<float>(bv[j])) + 1.0f) << i << "," << j;
    }
}

// ---- ISA tables ----

TEST(Pointwise, IsaTablesBitwiseIdentical) {
  // Baseline against every ISA up to the active one (AVX2 without AVX-512; tests/isa_util.h).
  const int isas = kiln::testing::isas_to_compare("Pointwise.IsaTablesBitwiseIdentical");
  if (isas < 2) GTEST_SKIP() << "only the baseline ISA here: nothing to compare with";
  const bool has_avx512 = isas == 3;
  static PointwiseTable tables[3];
  isa_baseline::fill_pointwise_table(tables[0]);
  isa_avx2::fill_pointwise_table(tables[1]);
  if (has_avx512) isa_avx512::fill_pointwise_table(tables[2]);
  // 1003 values (not a multiple of any vector width) over a wide range, with specials.
  std::vector<double> v;
  for (int i = 0; i < 1003; ++i) v.push_back(std::sin(i * 0.7) * std::pow(1.02, i % 300) * 3);
  v[5] = NAN, v[6] = INFINITY, v[7] = -INFINITY, v[8] = -0.0, v[9] = 0.5, v[10] = -2.5;
  std::vector<double> w(v.rbegin(), v.rend());
  const Scalar params[2] = {Scalar(-1.5), Scalar(2.25)};
  int checked = 0;
  for (int op = 0; op < kNumOps; ++op) {
    for (int dt = 0; dt < kNumDTypes; ++dt) {
      if (!tables[0].op[op][dt]) continue;
      ASSERT_TRUE(tables[1].op[op][dt] && (!has_avx512 || tables[2].op[op][dt])) << op;
      DType d = static_cast<DType>(dt);
      OpId id = static_cast<OpId>(op);
      bool binary = id >= OpId::Add && id <= OpId::LogicalOr;
      bool bool_out = (id >= OpId::Eq && id <= OpId::Ge) || id == OpId::Isnan;
      DType od = bool_out ? kBool : d;
      // Contiguous inputs, then strided (every other element) and broadcast second operand.
      for (int variant = 0; variant < 3; ++variant) {
        Tensor a = make(v, {1003}, d), b = make(w, {1003}, d);
        if (variant == 1) a = make(v, {1003}, d).slice(0, 0, 1002, 2), b = b.slice(0, 1, 1003, 2);
        if (variant == 2) b = make({1.75}, {}, d).expand(a.sizes());
        std::vector<Tensor> outs;
        for (int k = 0; k < isas; ++k) {
          const PointwiseTable& t = tables[k];
          Tensor out = zeros(a.sizes(), TensorOptions().dtype(od));
          std::vector<Tensor> in = binary ? std::vector<Tensor>{a, b} : std::vector<Tensor>{a};
          ElementwiseLoop(out, in).run(t.op[op][dt], params);
          outs.push_back(out);
        }
        size_t bytes = outs[0].numel() * itemsize(od);
        for (int k = 1; k < isas; ++k)
          EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), outs[k].raw_data(), bytes))
              << op_name(id) << " " << dname(d) << " variant " << variant << " isa " << k;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 150);
}

// More dims than DimVector keeps inline (6): the loop's heap path, permuted and broadcast.
TEST(Pointwise, HighRankPermutedAndBroadcast) {
  Shape s = {2, 1, 3, 2, 1, 2, 3, 2};  // 8 dims, 144 elements
  std::vector<double> v(144);
  for (int i = 0; i < 144; ++i) v[i] = i - 70;
  Tensor x = make(v, s, kFloat64);
  Tensor p = x.permute({7, 6, 5, 4, 3, 2, 1, 0});  // reversed dims: every stride reversed
  Tensor b = make({0.5, -2}, {2, 1, 1, 1, 1, 1, 1, 1}, kFloat64);  // broadcast on the last dim
  Tensor y = p * b + p;
  ASSERT_EQ(y.sizes(), (Shape{2, 3, 2, 1, 2, 3, 1, 2}));
  std::vector<double> pv = values(p), got = values(y);
  // In p's row-major order the first dim has size 2 and stride 72 in the flat order.
  for (int i = 0; i < 144; ++i) {
    double bv = i < 72 ? 0.5 : -2;
    EXPECT_EQ(got[i], pv[i] * bv + pv[i]) << i;
  }
  // In place through the permuted view, read back through the base.
  p.mul_(b);
  std::vector<double> xv = values(x);
  for (int i = 0; i < 144; ++i) EXPECT_EQ(xv[i], v[i] * (i % 2 == 0 ? 0.5 : -2)) << i;
}

// Changing the thread count while another thread runs parallel ops must not pull the arena from
// under it.
TEST(Pointwise, ThreadCountChangesDuringParallelOps) {
  int saved = config().num_threads;
  Tensor a = make(std::vector<double>(400000, 1.5), {400000}, kFloat32);
  std::atomic<bool> done{false};
  std::thread worker([&] {
    for (int i = 0; i < 200; ++i) {
      Tensor y = a * 2 + 1;
      if (values(y[i])[0] != 4.0) ADD_FAILURE() << "wrong value at iteration " << i;
    }
    done = true;
  });
  for (int n = 1; !done; n = n % 3 + 1) set_num_threads(n);
  worker.join();
  set_num_threads(saved);
}

// PyTorch's clamp is min(max(x, lo), hi): with lo > hi every element becomes hi.
TEST(Pointwise, ClampWithLowAboveHighGivesHigh) {
  kiln::Tensor x = kiln::from_vector<float>({-5, 0, 5, NAN}, {4});
  std::vector<float> got = kiln::clamp(x, 2.0, 1.0).to_vector<float>();
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_EQ(got[2], 1.0f);
  EXPECT_TRUE(std::isnan(got[3]));
  kiln::Tensor i = kiln::from_vector<int64_t>({-5, 0, 5}, {3});
  i.clamp_(3, 1);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
}

namespace kiln {
namespace {

// An operand with more dims than the output is an error naming the shapes, never a write past
// the loop's stride arrays (a recorder bug once handed the copy op a [2, 2, 2] result for a
// 0-dim tensor: heap corruption and a crash in a later free, under load only).
TEST(ElementwiseLoopTest, AnOperandOfHigherRankThanTheOutputIsAnError) {
  const Tensor out = empty_tensor({}, kFloat32, Device::cpu());
  const Tensor in = ones({2, 2, 2});
  const Tensor ins[] = {in};
  try {
    ElementwiseLoop loop(out, ins);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 2, 2]"), std::string::npos) << e.what();
  }
  // The shapes broadcasting allows still run: [2] into [2, 2].
  const Tensor wide = empty_tensor({2, 2}, kFloat32, Device::cpu());
  const Tensor row[] = {ones({2})};
  EXPECT_NO_THROW(ElementwiseLoop(wide, row));
}

}  // namespace
}  // namespace kiln
