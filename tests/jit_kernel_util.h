// Helpers for the JIT tests: the ISA paths this host runs, and a scalar reference of the loop IR
// computed operation for operation as the eager functors (ops/cpu/pointwise_functors.h) compute.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/loop/loop_kernel.h"
#include "kiln/kiln.h"
#include "ops/cpu/pointwise_functors.h"

namespace kiln::testing {

// n values of dtype t over many magnitudes, with specials (NaN, infinities, zeros) mixed in;
// Bool as x > 0.5, integers truncated into +-1e9 (non-finite: 7).
inline Tensor values(DType t, int64_t n, int salt) {
  const double sp[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 1e-40, 9.0, -20.0, 3e9};
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i + salt);
    v[static_cast<size_t>(i)] = k % 5 == 0
                                    ? sp[k / 5 % std::size(sp)]
                                    : std::ldexp(static_cast<double>(k * 2654435761u % 2001) - 1000,
                                                 static_cast<int>(k % 13) - 12);
  }
  if (t == DType::Bool) {
    for (double& x : v) x = x > 0.5 ? 1.0 : 0.0;
  } else if (!is_floating(t)) {
    for (double& x : v) x = std::isfinite(x) ? std::fmod(std::trunc(x), 1e9) : 7.0;
  }
  return from_vector<double>(v, {n}).to(t);
}

// `v` stored at `at` as dtype t: Bool as the byte v != 0, integers truncated, floats rounded.
inline void store_value(DType t, double v, void* at) {
  switch (t) {
    case DType::Bool:
      *static_cast<uint8_t*>(at) = v != 0.0 ? 1 : 0;
      break;
    case DType::Int32: {
      const auto x = static_cast<int32_t>(v);
      std::memcpy(at, &x, 4);
      break;
    }
    case DType::Int64: {
      const auto x = static_cast<int64_t>(v);
      std::memcpy(at, &x, 8);
      break;
    }
    case DType::Float32: {
      const auto x = static_cast<float>(v);
      std::memcpy(at, &x, 4);
      break;
    }
    case DType::Float64:
      std::memcpy(at, &v, 8);
      break;
  }
}

// The KILN_JIT_ISA values whose paths this host can run, best first.
inline std::vector<std::string> supported_jit_isas() {
  std::vector<std::string> out;
  const jit::JitIsa host = jit::host_jit_isa();
  if (host >= jit::JitIsa::Avx512) out.push_back("avx512");
  if (host >= jit::JitIsa::Avx2) out.push_back("avx2");
  out.push_back("sse2");
  return out;
}

// Vector lanes of `isa` for elements of `esize` bytes.
inline int jit_lanes(const std::string& isa, int esize) {
  const int bytes = isa == "avx512" ? 64 : isa == "avx2" ? 32 : 16;
  return bytes / esize;
}

// The eager result of a transcendental op on one element (the vector math the JIT must match).
template <class T>
T eager_transcendental(jit::ExprOp op, T x) {
  Tensor t = from_vector<T>(std::vector<T>{x}, {1});
  Tensor r;
  switch (op) {
    case jit::ExprOp::Exp:
      r = t.exp();
      break;
    case jit::ExprOp::Log:
      r = t.log();
      break;
    case jit::ExprOp::Log1p:
      r = t.log1p();
      break;
    case jit::ExprOp::Expm1:
      r = t.expm1();
      break;
    case jit::ExprOp::Tanh:
      r = t.tanh();
      break;
    case jit::ExprOp::Sigmoid:
      r = t.sigmoid();
      break;
    case jit::ExprOp::Silu:
      r = t.silu();
      break;
    case jit::ExprOp::Erf:
      r = t.erf();
      break;
    case jit::ExprOp::Sin:
      r = t.sin();
      break;
    case jit::ExprOp::Cos:
      r = t.cos();
      break;
    case jit::ExprOp::Gelu:
      r = t.gelu();
      break;
    case jit::ExprOp::GeluTanh:
      r = t.gelu("tanh");
      break;
    default:
      ADD_FAILURE() << "not transcendental";
      return x;
  }
  return r.item<T>();
}

// Evaluates `k` on one element: `in[j]` the value of input j, `params` as launched (doubles,
// converted to T as the launch converts them). Writes output k to out[k].
template <class T>
void reference_eval(const jit::LoopKernel& k, const T* in, const double* params, T* out) {
  using jit::ExprOp;
  namespace pw = kiln::pointwise;
  const size_t n = k.exprs.size();
  std::vector<T> v(n);
  std::vector<char> m(n);
  for (size_t i = 0; i < n; ++i) {
    const jit::Expr& e = k.exprs[i];
    const T a = e.a >= 0 ? v[e.a] : T(0), b = e.b >= 0 ? v[e.b] : T(0);
    switch (e.op) {
      case ExprOp::Load:
        v[i] = in[e.index];
        break;
      case ExprOp::Const:
        v[i] = static_cast<T>(e.value);
        break;
      case ExprOp::Param:
        v[i] = static_cast<T>(params[e.index]);
        break;
      case ExprOp::Neg:
        v[i] = pw::NegF(nullptr)(a);
        break;
      case ExprOp::Abs:
        v[i] = pw::AbsF(nullptr)(a);
        break;
      case ExprOp::Sqrt:
        v[i] = pw::SqrtF(nullptr)(a);
        break;
      case ExprOp::Rsqrt:
        v[i] = pw::RsqrtF(nullptr)(a);
        break;
      case ExprOp::Reciprocal:
        v[i] = pw::ReciprocalF(nullptr)(a);
        break;
      case ExprOp::Square:
        v[i] = pw::SquareF(nullptr)(a);
        break;
      case ExprOp::Relu:
        v[i] = pw::ReluF(nullptr)(a);
        break;
      case ExprOp::Sign:
        v[i] = pw::SignF(nullptr)(a);
        break;
      case ExprOp::Add:
        v[i] = pw::AddF(nullptr)(a, b);
        break;
      case ExprOp::Sub:
        v[i] = pw::SubF(nullptr)(a, b);
        break;
      case ExprOp::Mul:
        v[i] = pw::MulF(nullptr)(a, b);
        break;
      case ExprOp::Div:
        v[i] = pw::DivF(nullptr)(a, b);
        break;
      case ExprOp::Pow:
        v[i] = pw::PowF(nullptr)(a, b);
        break;
      case ExprOp::Maximum:
        v[i] = pw::MaximumF(nullptr)(a, b);
        break;
      case ExprOp::Minimum:
        v[i] = pw::MinimumF(nullptr)(a, b);
        break;
      case ExprOp::Lt:
        m[i] = pw::LtF(nullptr)(a, b);
        break;
      case ExprOp::Le:
        m[i] = pw::LeF(nullptr)(a, b);
        break;
      case ExprOp::Gt:
        m[i] = pw::GtF(nullptr)(a, b);
        break;
      case ExprOp::Ge:
        m[i] = pw::GeF(nullptr)(a, b);
        break;
      case ExprOp::Eq:
        m[i] = pw::EqF(nullptr)(a, b);
        break;
      case ExprOp::Ne:
        m[i] = pw::NeF(nullptr)(a, b);
        break;
      case ExprOp::Select:
        v[i] = m[e.a] ? v[e.b] : v[e.c];
        break;
      case ExprOp::Floor:
        v[i] = pw::FloorF(nullptr)(a);
        break;
      case ExprOp::Ceil:
        v[i] = pw::CeilF(nullptr)(a);
        break;
      case ExprOp::Round:
        v[i] = pw::RoundF(nullptr)(a);
        break;
      default:
        v[i] = eager_transcendental<T>(e.op, a);
        break;
    }
  }
  for (int32_t j = 0; j < k.num_outputs(); ++j) out[j] = v[k.stores[j]];
}

// NaN-canonicalized bits of a float or double (the numerical contract leaves NaN sign and payload
// open).
template <class T>
uint64_t canonical_bits(T x) {
  if (x != x) return sizeof(T) == 4 ? 0x7fc00000u : 0x7ff8000000000000ull;
  uint64_t b = 0;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}

}  // namespace kiln::testing
