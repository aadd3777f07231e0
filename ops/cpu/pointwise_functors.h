// The scalar math of every pointwise op, one functor per op. The per-ISA kernel files instantiate
// these inside vectorizable loops; the tests compare them against their own scalar references.
// The transcendental ops (KILN_UNARY_VM) have no scalar formula of their own: their float math is
// kiln's vector math (ops/cpu/vecmath/, the algorithms the JIT emits too), through `vec` on a
// vector of lanes or through one lane for a single value, so every element of such an op gives
// the same bits whatever the layout and the ISA.
// Semantics follow PyTorch: NaN propagates through maximum/minimum/clamp/relu, round is half to
// even, sign of NaN is 0.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/cpu/vecmath/gnu_vec_ops.h"
#include "ops/cpu/vecmath/vecmath.h"
#include "runtime/scalar.h"

namespace kiln::pointwise {

// Which dtypes an op's kernel is instantiated for.
enum class Domain { Floating, Numeric, All, BoolOnly };

template <Domain D, class T>
constexpr bool in_domain() {
  if constexpr (D == Domain::Floating)
    return std::is_floating_point_v<T>;
  else if constexpr (D == Domain::Numeric)
    return !std::is_same_v<T, bool>;
  else if constexpr (D == Domain::BoolOnly)
    return std::is_same_v<T, bool>;
  else
    return true;
}

#define KILN_UNARY(Name, Dom, expr)               \
  struct Name {                                   \
    static constexpr Domain domain = Domain::Dom; \
    static constexpr bool bool_out = false;       \
    explicit Name(const Scalar*) {}               \
    template <class T>                            \
    T operator()(T x) const {                     \
      return expr;                                \
    }                                             \
  };

// Integer arithmetic wraps in two's complement as PyTorch's does (INT_MIN negated is INT_MIN),
// computed in the unsigned type so it is defined behaviour; floats and bool use the plain ops.
template <class T>
constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
inline T wrap_neg(T x) {
  if constexpr (kWraps<T>)
    return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x));
  else
    return -x;
}
template <class T>
inline T wrap_add(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return T(a + b);
  }
}
template <class T>
inline T wrap_sub(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return T(a - b);
  }
}
template <class T>
inline T wrap_mul(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return T(a * b);
  }
}

// A floating-point op computed by vecmath::fn (vec_fn for the vector path).
#define KILN_UNARY_VM(Name, fn)                                                         \
  struct Name {                                                                         \
    static constexpr Domain domain = Domain::Floating;                                  \
    static constexpr bool bool_out = false;                                             \
    static constexpr bool kVec = true;                                                  \
    explicit Name(const Scalar*) {}                                                     \
    template <class O, class V>                                                         \
    static V vec(const O& o, V x) {                                                     \
      return vecmath::fn(o, x);                                                         \
    }                                                                                   \
    template <class T>                                                                  \
    T operator()(T x) const {                                                           \
      return vecmath::apply_scalar(x, [](const auto& o, auto v) { return vec(o, v); }); \
    }                                                                                   \
  };

KILN_UNARY(NegF, Numeric, wrap_neg(x))
KILN_UNARY(AbsF, Numeric, x < T(0) ? wrap_neg(x) : x)
KILN_UNARY_VM(ExpF, exp)
KILN_UNARY_VM(LogF, log)
KILN_UNARY_VM(Log1pF, log1p)
KILN_UNARY_VM(Expm1F, expm1)
KILN_UNARY(SqrtF, Floating, std::sqrt(x))
KILN_UNARY(RsqrtF, Floating, T(1) / std::sqrt(x))
KILN_UNARY(ReciprocalF, Floating, T(1) / x)
KILN_UNARY_VM(SinF, sin)
KILN_UNARY_VM(CosF, cos)
KILN_UNARY_VM(TanhF, tanh)
KILN_UNARY_VM(SigmoidF, sigmoid)
KILN_UNARY(ReluF, Numeric, x < T(0) ? T(0) : x)
KILN_UNARY_VM(SiluF, silu)
KILN_UNARY_VM(ErfF, erf)
KILN_UNARY(FloorF, Numeric, std::is_floating_point_v<T> ? T(std::floor(x)) : x)
KILN_UNARY(CeilF, Numeric, std::is_floating_point_v<T> ? T(std::ceil(x)) : x)
KILN_UNARY(RoundF, Numeric, std::is_floating_point_v<T> ? T(std::nearbyint(x)) : x)
KILN_UNARY(SignF, All, T((T(0) < x) - (x < T(0))))
KILN_UNARY(SquareF, Numeric, wrap_mul(x, x))
KILN_UNARY_VM(GeluF, gelu)
KILN_UNARY_VM(GeluTanhF, gelu_tanh)
#undef KILN_UNARY
#undef KILN_UNARY_VM

struct IsnanF {
  static constexpr Domain domain = Domain::All;
  static constexpr bool bool_out = true;
  explicit IsnanF(const Scalar*) {}
  template <class T>
  bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return x != x;
    else
      return false;
  }
};

struct LogicalNotF {
  static constexpr Domain domain = Domain::BoolOnly;
  static constexpr bool bool_out = false;
  explicit LogicalNotF(const Scalar*) {}
  bool operator()(bool x) const { return !x; }
};

// Integer power by squaring; a negative exponent gives 1/b^|e| truncated (0 unless |b| == 1).
// static: each per-ISA object keeps its own copy. The kernels compile at -O3, which inlines it; at
// -O1 or -O2 (checked under ASan) it is not, and a shared weak symbol would let the linker give
// baseline callers the AVX-512 copy.
template <class T>
static T int_pow(T b, T e) {
  if (e < 0) return b == 1 ? T(1) : (b == -1 ? ((e & 1) ? T(-1) : T(1)) : T(0));
  T r = 1;
  while (e) {
    if (e & 1) r = wrap_mul(r, b);
    e >>= 1;
    if (e) b = wrap_mul(b, b);  // not after the last bit: that square could overflow needlessly
  }
  return r;
}

// pow of a tensor and a Scalar exponent. The exponents 2, 0.5 and 1 are x * x, sqrt(x) and x
// (the JIT lowers exactly these: jit/plan/lowering.cpp); floats otherwise go through
// vecmath::pow, on a vector of lanes or through one lane.
struct PowScalarF {
  static constexpr Domain domain = Domain::Numeric;
  static constexpr bool bool_out = false;
  static constexpr bool kVec = true;  // floating dtypes only (unary_loop)
  Scalar e;
  double ed;
  explicit PowScalarF(const Scalar* p) : e(p[0]), ed(p[0].to_double()) {}
  template <class O, class V>
  V vec(const O& o, V x) const {
    if (ed == 2.0) return o.mul(x, x);
    if (ed == 0.5) return o.sqrt(x);
    if (ed == 1.0) return x;
    // y's class tests stay in the loop's code, where GCC hoists them: pow_scalar's facts,
    // runtime values here, cost a branch each per vector (17% slower on Zen 1).
    return vecmath::pow(o, x, o.splat(static_cast<double>(static_cast<typename O::T>(ed))));
  }
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return vecmath::apply_scalar(x, [this](const auto& o, auto v) { return vec(o, v); });
    else
      return int_pow(x, T(e.to_int()));
  }
};

// pow of two tensors: integers by squaring, floats through vecmath::pow (kVec2: the binary
// loops run it on vectors of lanes, on every layout).
struct PowF {
  static constexpr Domain domain = Domain::Numeric;
  static constexpr bool bool_out = false;
  static constexpr bool kVec2 = true;  // floating dtypes only (binary_loop)
  explicit PowF(const Scalar*) {}
  template <class O, class V>
  static V vec(const O& o, V a, V b) {
    return vecmath::pow(o, a, b);
  }
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return vecmath::apply_scalar2(a, b,
                                    [](const auto& o, auto x, auto y) { return vec(o, x, y); });
    else
      return int_pow(a, b);
  }
};

struct ClampF {
  static constexpr Domain domain = Domain::Numeric;
  static constexpr bool bool_out = false;
  Scalar lo, hi;
  explicit ClampF(const Scalar* p) : lo(p[0]), hi(p[1]) {}
  template <class T>
  T operator()(T x) const {
    // min(max(x, lo), hi) as PyTorch: NaN passes through, and lo > hi gives hi everywhere.
    T l = lo.to<T>(), h = hi.to<T>();
    T v = x < l ? l : x;
    return v > h ? h : v;
  }
};

#define KILN_BINARY(Name, Dom, BoolOut, expr)     \
  struct Name {                                   \
    static constexpr Domain domain = Domain::Dom; \
    static constexpr bool bool_out = BoolOut;     \
    explicit Name(const Scalar*) {}               \
    template <class T>                            \
    auto operator()(T a, T b) const {             \
      return expr;                                \
    }                                             \
  };

template <class T>
inline T max_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? b : a;
}
template <class T>
inline T min_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

KILN_BINARY(AddF, All, false, wrap_add(a, b))
KILN_BINARY(SubF, Numeric, false, wrap_sub(a, b))
KILN_BINARY(MulF, All, false, wrap_mul(a, b))
KILN_BINARY(DivF, Floating, false, T(a / b))
KILN_BINARY(MaximumF, All, false, max_nan(a, b))
KILN_BINARY(MinimumF, All, false, min_nan(a, b))
KILN_BINARY(EqF, All, true, bool(a == b))
KILN_BINARY(NeF, All, true, bool(a != b))
KILN_BINARY(LtF, All, true, bool(a < b))
KILN_BINARY(LeF, All, true, bool(a <= b))
KILN_BINARY(GtF, All, true, bool(a > b))
KILN_BINARY(GeF, All, true, bool(a >= b))
KILN_BINARY(LogicalAndF, BoolOnly, false, bool(a&& b))
KILN_BINARY(LogicalOrF, BoolOnly, false, bool(a || b))
#undef KILN_BINARY

}  // namespace kiln::pointwise
