// Pointwise inner loops. CMake compiles this file once per ISA (baseline, AVX2, AVX-512) with
// KILN_ISA_NS naming the namespace and -ffp-contract=off, so every ISA gives the same bits; the
// contiguous and broadcast-scalar cases are written as plain loops the compiler vectorizes. Each
// op and cast also has a streaming variant (ops/cpu/streaming_store.h: the same loop, its output
// written with non-temporal stores) that the callers pick for large contiguous outputs.
#include <type_traits>

#include "ops/cpu/pointwise_functors.h"
#include "ops/cpu/pointwise_table.h"
#include "ops/cpu/streaming_store.h"
#include "ops/cpu/vecmath/gnu_vec_ops.h"

#ifndef KILN_ISA_NS
#error "KILN_ISA_NS must name the ISA namespace"
#endif

namespace kiln::KILN_ISA_NS {

namespace {

using namespace pointwise;

template <class F, class T>
using out_t = std::conditional_t<F::bool_out, bool, T>;

template <class F>
concept VecMathOp = F::kVec;

// An op computed by kiln's vector math: contiguous runs as whole vectors of the ISA's width plus a
// padded tail; a broadcast input as one lane; strided runs gathered into vectors and scattered
// back. Lane-wise code, so the same bits on every layout and ISA.
template <class F, class T>
void unary_vec_loop(char* const* p, const int64_t* s, int64_t n, const Scalar* params) {
  constexpr int W = vecmath::kNativeVecBytes;
  using Ops = vecmath::GnuVecOps<T, W>;
  constexpr int L = Ops::kLanes;
  const F f(params);
  auto fn = [&f](const auto& o, auto x) { return f.vec(o, x); };
  T* out = reinterpret_cast<T*>(p[0]);
  const T* a = reinterpret_cast<const T*>(p[1]);
  if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
    vecmath::map_contiguous<T, W>(a, out, n, fn);
  } else if (s[0] == sizeof(T) && s[1] == 0) {
    const T v = vecmath::apply_scalar(a[0], fn);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  } else {
    T buf[L];
    for (int64_t i = 0; i < n; i += L) {
      const int64_t m = n - i < L ? n - i : L;
      for (int64_t j = 0; j < m; ++j) buf[j] = *reinterpret_cast<const T*>(p[1] + (i + j) * s[1]);
      for (int64_t j = m; j < L; ++j) buf[j] = T(0);
      vecmath::map_contiguous<T, W>(buf, buf, L, fn);
      for (int64_t j = 0; j < m; ++j) *reinterpret_cast<T*>(p[0] + (i + j) * s[0]) = buf[j];
    }
  }
}

template <class F, class T>
void unary_loop(char* const* p, const int64_t* s, int64_t n, const Scalar* params) {
  using O = out_t<F, T>;
  if constexpr (VecMathOp<F> && std::is_floating_point_v<T>) {
    return unary_vec_loop<F, T>(p, s, n, params);
  }
  const F f(params);
  O* out = reinterpret_cast<O*>(p[0]);
  const T* a = reinterpret_cast<const T*>(p[1]);
  if (s[0] == sizeof(O) && s[1] == sizeof(T)) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
  } else if (s[0] == sizeof(O) && s[1] == 0) {
    const O v = f(a[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]));
  }
}

template <class F>
concept VecMathBinaryOp = F::kVec2;

// A binary op computed by kiln's vector math (pow): contiguous operands or a broadcast one as
// whole vectors plus a padded tail, strided runs gathered into vectors; lane-wise, so the same
// bits on every layout and ISA.
template <class F, class T>
void binary_vec_loop(char* const* p, const int64_t* s, int64_t n) {
  constexpr int W = vecmath::kNativeVecBytes;
  constexpr int L = vecmath::GnuVecOps<T, W>::kLanes;
  auto fn = [](const auto& o, auto x, auto y) { return F::vec(o, x, y); };
  T* out = reinterpret_cast<T*>(p[0]);
  const T* a = reinterpret_cast<const T*>(p[1]);
  const T* b = reinterpret_cast<const T*>(p[2]);
  constexpr int64_t e = sizeof(T);
  if (s[0] == e && (s[1] == e || s[1] == 0) && (s[2] == e || s[2] == 0)) {
    vecmath::map_contiguous2<T, W>(a, s[1] ? 1 : 0, b, s[2] ? 1 : 0, out, n, fn);
    return;
  }
  T ba[L], bb[L];
  for (int64_t i = 0; i < n; i += L) {
    const int64_t m = n - i < L ? n - i : L;
    for (int64_t j = 0; j < m; ++j) {
      ba[j] = *reinterpret_cast<const T*>(p[1] + (i + j) * s[1]);
      bb[j] = *reinterpret_cast<const T*>(p[2] + (i + j) * s[2]);
    }
    for (int64_t j = m; j < L; ++j) ba[j] = bb[j] = T(0);
    vecmath::map_contiguous2<T, W>(ba, 1, bb, 1, ba, L, fn);
    for (int64_t j = 0; j < m; ++j) *reinterpret_cast<T*>(p[0] + (i + j) * s[0]) = ba[j];
  }
}

template <class F, class T>
void binary_loop(char* const* p, const int64_t* s, int64_t n, const Scalar* params) {
  using O = out_t<F, T>;
  if constexpr (VecMathBinaryOp<F> && std::is_floating_point_v<T>) {
    return binary_vec_loop<F, T>(p, s, n);
  }
  const F f(params);
  O* out = reinterpret_cast<O*>(p[0]);
  const T* a = reinterpret_cast<const T*>(p[1]);
  const T* b = reinterpret_cast<const T*>(p[2]);
  if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == 0) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (s[0] == sizeof(O) && s[1] == 0 && s[2] == sizeof(T)) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]),
                                                 *reinterpret_cast<const T*>(p[2] + i * s[2]));
  }
}

template <class From, class To>
void cast_loop(char* const* p, const int64_t* s, int64_t n, const Scalar*) {
  if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
    To* out = reinterpret_cast<To*>(p[0]);
    if constexpr (std::is_same_v<From, bool> && !std::is_same_v<To, bool>) {
      // Bool entries are bytes 0 or 1: read as bytes, which GCC vectorizes (as bool it did
      // not: Bool -> Float32 ran at ~0.37 ns an element, other casts at 0.08).
      const uint8_t* a = reinterpret_cast<const uint8_t*>(p[1]);
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(a[i]);
      return;
    }
    const From* a = reinterpret_cast<const From*>(p[1]);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(a[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<To*>(p[0] + i * s[0]) =
          static_cast<To>(*reinterpret_cast<const From*>(p[1] + i * s[1]));
  }
}

template <class T>
void fill_loop(char* const* p, const int64_t* s, int64_t n, const Scalar* params) {
  const T v = params[0].to<T>();
  if (s[0] == sizeof(T)) {
    T* out = reinterpret_cast<T*>(p[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
  }
}

// where(c, a, b): a contiguous output and condition with a and b each contiguous or a broadcast
// value (relu's backward: where(x > 0, g, 0)) as plain loops the compiler vectorizes; the rest
// element by element. A select: the same bits either way. Both sides are loaded before the
// select: `c[i] ? a[i] : b[i]` reads one side only, which GCC may not turn into a vector blend
// (the other load could fault), and the branch on random conditions cost ~2.3 ns an element.
template <class T>
void where_loop(char* const* p, const int64_t* s, int64_t n, const Scalar*) {
  constexpr int64_t e = sizeof(T);
  if (s[0] == e && s[1] == sizeof(bool) && (s[2] == e || s[2] == 0) && (s[3] == e || s[3] == 0)) {
    T* out = reinterpret_cast<T*>(p[0]);
    const uint8_t* c = reinterpret_cast<const uint8_t*>(p[1]);
    const T* a = reinterpret_cast<const T*>(p[2]);
    const T* b = reinterpret_cast<const T*>(p[3]);
    const int64_t as = s[2] ? 1 : 0, bs = s[3] ? 1 : 0;
    auto run = [&](auto a_step, auto b_step) {
      for (int64_t i = 0; i < n; ++i) {
        const T x = a[i * a_step], y = b[i * b_step];
        out[i] = c[i] != 0 ? x : y;
      }
    };
    using One = std::integral_constant<int64_t, 1>;
    using Zero = std::integral_constant<int64_t, 0>;
    if (as && bs)
      run(One{}, One{});
    else if (as)
      run(One{}, Zero{});
    else if (bs)
      run(Zero{}, One{});
    else
      run(Zero{}, Zero{});
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
    *reinterpret_cast<T*>(p[0] + i * s[0]) = c ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                               : *reinterpret_cast<const T*>(p[3] + i * s[3]);
  }
}

// masked_fill(a, m, v): contiguous operands as a loop the compiler vectorizes (both sides loaded
// before the select, as where_loop), the rest element by element.
template <class T>
void masked_fill_loop(char* const* p, const int64_t* s, int64_t n, const Scalar* params) {
  const T v = params[0].to<T>();
  if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(bool)) {
    T* out = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const uint8_t* m = reinterpret_cast<const uint8_t*>(p[2]);
    for (int64_t i = 0; i < n; ++i) {
      const T x = a[i];
      out[i] = m[i] != 0 ? v : x;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    bool m = *reinterpret_cast<const bool*>(p[2] + i * s[2]);
    *reinterpret_cast<T*>(p[0] + i * s[0]) = m ? v : *reinterpret_cast<const T*>(p[1] + i * s[1]);
  }
}

template <class T>
struct Tag {};

template <class F, int Arity>
void set_op(PointwiseTable& t, OpId id) {
  auto one = [&]<class T>(Tag<T>, DType dt) {
    if constexpr (in_domain<F::domain, T>()) {
      using O = out_t<F, T>;
      if constexpr (Arity == 1) {
        t.op[int(id)][int(dt)] = &unary_loop<F, T>;
        t.op_nt[int(id)][int(dt)] = &streaming::streamed_loop<&unary_loop<F, T>, O>;
      } else {
        t.op[int(id)][int(dt)] = &binary_loop<F, T>;
        t.op_nt[int(id)][int(dt)] = &streaming::streamed_loop<&binary_loop<F, T>, O>;
      }
    }
  };
  one(Tag<bool>{}, DType::Bool);
  one(Tag<int32_t>{}, DType::Int32);
  one(Tag<int64_t>{}, DType::Int64);
  one(Tag<float>{}, DType::Float32);
  one(Tag<double>{}, DType::Float64);
}

template <class T>
void set_per_dtype(PointwiseTable& t) {
  constexpr int d = int(dtype_v<T>);
  t.fill[d] = &fill_loop<T>;
  t.where[d] = &where_loop<T>;
  t.masked_fill[d] = &masked_fill_loop<T>;
  auto cast = [&]<class To>(Tag<To>) {
    constexpr int to = int(dtype_v<To>);
    t.cast[d][to] = &cast_loop<T, To>;
    if constexpr (std::is_same_v<T, To>)
      t.cast_nt[d][to] = &streaming::streamed_copy<&cast_loop<T, To>, To>;
    else
      t.cast_nt[d][to] = &streaming::streamed_loop<&cast_loop<T, To>, To>;
  };
  cast(Tag<bool>{});
  cast(Tag<int32_t>{});
  cast(Tag<int64_t>{});
  cast(Tag<float>{});
  cast(Tag<double>{});
}

}  // namespace

void fill_pointwise_table(PointwiseTable& t) {
  set_op<NegF, 1>(t, OpId::Neg);
  set_op<AbsF, 1>(t, OpId::Abs);
  set_op<ExpF, 1>(t, OpId::Exp);
  set_op<LogF, 1>(t, OpId::Log);
  set_op<Log1pF, 1>(t, OpId::Log1p);
  set_op<Expm1F, 1>(t, OpId::Expm1);
  set_op<SqrtF, 1>(t, OpId::Sqrt);
  set_op<RsqrtF, 1>(t, OpId::Rsqrt);
  set_op<ReciprocalF, 1>(t, OpId::Reciprocal);
  set_op<SinF, 1>(t, OpId::Sin);
  set_op<CosF, 1>(t, OpId::Cos);
  set_op<TanhF, 1>(t, OpId::Tanh);
  set_op<SigmoidF, 1>(t, OpId::Sigmoid);
  set_op<ReluF, 1>(t, OpId::Relu);
  set_op<SiluF, 1>(t, OpId::Silu);
  set_op<ErfF, 1>(t, OpId::Erf);
  set_op<FloorF, 1>(t, OpId::Floor);
  set_op<CeilF, 1>(t, OpId::Ceil);
  set_op<RoundF, 1>(t, OpId::Round);
  set_op<SignF, 1>(t, OpId::Sign);
  set_op<SquareF, 1>(t, OpId::Square);
  set_op<GeluF, 1>(t, OpId::Gelu);
  set_op<GeluTanhF, 1>(t, OpId::GeluTanh);
  set_op<IsnanF, 1>(t, OpId::Isnan);
  set_op<LogicalNotF, 1>(t, OpId::LogicalNot);
  set_op<PowScalarF, 1>(t, OpId::PowScalar);
  set_op<ClampF, 1>(t, OpId::Clamp);
  set_op<AddF, 2>(t, OpId::Add);
  set_op<SubF, 2>(t, OpId::Sub);
  set_op<MulF, 2>(t, OpId::Mul);
  set_op<DivF, 2>(t, OpId::Div);
  set_op<PowF, 2>(t, OpId::Pow);
  set_op<MaximumF, 2>(t, OpId::Maximum);
  set_op<MinimumF, 2>(t, OpId::Minimum);
  set_op<EqF, 2>(t, OpId::Eq);
  set_op<NeF, 2>(t, OpId::Ne);
  set_op<LtF, 2>(t, OpId::Lt);
  set_op<LeF, 2>(t, OpId::Le);
  set_op<GtF, 2>(t, OpId::Gt);
  set_op<GeF, 2>(t, OpId::Ge);
  set_op<LogicalAndF, 2>(t, OpId::LogicalAnd);
  set_op<LogicalOrF, 2>(t, OpId::LogicalOr);
  set_per_dtype<bool>(t);
  set_per_dtype<int32_t>(t);
  set_per_dtype<int64_t>(t);
  set_per_dtype<float>(t);
  set_per_dtype<double>(t);
}

}  // namespace kiln::KILN_ISA_NS
