// The eager lane backend of the vecmath contract (vec_ops.h): GCC vector extensions, W bytes per
// vector (16, 32 or 64; any width compiles on any ISA: GCC splits wide vectors into the widest
// registers the TU's flags allow, so the test TU can run every width on baseline x86-64).
// Every operation is lane-wise IEEE; the translation units that use it must be compiled with
// -ffp-contract=off (cmake/KilnLibrary.cmake sets it for kiln, its per-ISA objects and the tests)
// so that GCC never fuses a mul and an add into an FMA.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ops/cpu/vecmath/reduce_pio2.h"
#include "ops/cpu/vecmath/vec_ops.h"

#if defined(__FMA__)
#include <immintrin.h>
#endif

// The ISA this translation unit is compiled for, as a type in kiln's ISA namespace. GnuVecOps and
// the map/apply helpers take it as a defaulted template argument, so every vecmath template
// instantiated over them gets a mangled name of its own per ISA. Without it `vecmath::tanh<
// GnuVecOps<float, 64>>` has one name in the AVX-512 kernels and in baseline code (the tests):
// wherever GCC does not inline it (sanitizer and debug builds) the linker keeps one copy for all,
// so AVX-512 code can run on a CPU without it, and the two copies do not even agree on the calling
// convention (a 64-byte vector is returned in zmm0 with AVX-512, through a hidden pointer in rdi
// without: the caller's `o` arrived as null, docs/testing.md "Sanitizers"). build.isa_symbols
// accepts weak symbols that name `isa_avx2::`/`isa_avx512::`.
#if defined(__AVX512F__)
namespace kiln::isa_avx512 {
struct VecIsa {};
}  // namespace kiln::isa_avx512
namespace kiln::vecmath {
using NativeIsa = isa_avx512::VecIsa;
}
#elif defined(__AVX2__)
namespace kiln::isa_avx2 {
struct VecIsa {};
}  // namespace kiln::isa_avx2
namespace kiln::vecmath {
using NativeIsa = isa_avx2::VecIsa;
}
#else
namespace kiln::isa_baseline {
struct VecIsa {};
}  // namespace kiln::isa_baseline
namespace kiln::vecmath {
using NativeIsa = isa_baseline::VecIsa;
}
#endif

namespace kiln::vecmath {

template <class T_, int W, class Isa = NativeIsa>
struct GnuVecOps {
  static_assert(std::is_same_v<T_, float> || std::is_same_v<T_, double>);
  static_assert(W == 16 || W == 32 || W == 64);
  using T = T_;
  using IT = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  using UT = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  typedef T F __attribute__((vector_size(W)));
  typedef IT I __attribute__((vector_size(W)));
  typedef UT U __attribute__((vector_size(W)));
  using M = I;  // all ones or all zeros per lane
  static constexpr int kLanes = W / int(sizeof(T));

  // Memory access (backend-specific, not part of the math contract).
  static F load(const T* p) {
    F v;
    std::memcpy(&v, p, sizeof(F));
    return v;
  }
  static void store(T* p, F v) { std::memcpy(p, &v, sizeof(F)); }

  // One broadcast: `vector | scalar` broadcasts the scalar (exact for -0 and NaN, unlike an
  // addition to zero). A per-lane loop here, where `c` is not a constant (vecmath's Horner
  // loops read their coefficients from arrays in functions GCC does not inline), compiled to
  // 16 masked broadcasts a splat on AVX-512: eager exp ran at 1.7 ns an element, erf at 6.4.
  F splat(double c) const {
    const T s = static_cast<T>(c);
    UT bits;
    std::memcpy(&bits, &s, sizeof(bits));
    return (F)(U{} | bits);
  }
  F add(F a, F b) const { return a + b; }
  F sub(F a, F b) const { return a - b; }
  F mul(F a, F b) const { return a * b; }
  F div(F a, F b) const { return a / b; }
  F sqrt(F a) const {
    F r = a;
    for (int i = 0; i < kLanes; ++i) r[i] = std::sqrt(a[i]);
    return r;
  }
  // Whether fma below is one instruction (vecmath's optional hook: double_t.h two_prod).
  static constexpr bool fused_fma() {
#if defined(__AVX512F__)
    if constexpr (W == 64) return true;
#endif
#if defined(__FMA__)
    if constexpr (W <= 32) return true;
#endif
    return false;
  }
  // a * b + c rounded once: one vfmadd where the TU's ISA has FMA for this width, else libm's fma
  // lane by lane (correctly rounded in software where the CPU has no FMA): the same bits.
  [[gnu::always_inline]] F fma(F a, F b, F c) const {
    [[maybe_unused]] constexpr bool f32 = sizeof(T) == 4;
#if defined(__FMA__)
    if constexpr (W == 16) {
      if constexpr (f32)
        return (F)_mm_fmadd_ps((__m128)a, (__m128)b, (__m128)c);
      else
        return (F)_mm_fmadd_pd((__m128d)a, (__m128d)b, (__m128d)c);
    } else if constexpr (W == 32) {
      if constexpr (f32)
        return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
      else
        return (F)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
    }
#endif
#if defined(__AVX512F__)
    if constexpr (W == 64) {
      if constexpr (f32)
        return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
      else
        return (F)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
    }
#endif
    if constexpr (f32) {
      return fma_via_double(a, b, c);
    } else {
      F r = c;
      for (int i = 0; i < kLanes; ++i) r[i] = std::fma(a[i], b[i], c[i]);
      return r;
    }
  }
  // a * b + c for float lanes without an FMA instruction, exactly rounded: in double the product
  // is exact (24 + 24 bits), the sum is rounded to odd (round to nearest, then its error from
  // TwoSum moves an inexact even result to its odd neighbour on the exact value's side), and
  // rounding that to float is the correctly rounded result, since 53 >= 24 + 2 (Boldo and
  // Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
  // odd", 2008). Infinite and NaN sums are left as they are. jit/cpu/vec_emitter.h emits the same
  // steps for SSE2 kernels. Both always inlined: GCC 12 passing three 64-byte vectors by value
  // to an out-of-line copy from a loop in a baseline TU moved rsp down 192 bytes per call and
  // never back, until the thread's stack ran out (VecmathUlp's tanh at W = 64).
  [[gnu::always_inline]] static F fma_via_double(F a, F b, F c) {
    typedef double D __attribute__((vector_size(2 * W)));
    typedef int64_t L __attribute__((vector_size(2 * W)));
    typedef uint64_t UL __attribute__((vector_size(2 * W)));
    const D pa = __builtin_convertvector(a, D), pb = __builtin_convertvector(b, D),
            pc = __builtin_convertvector(c, D);
    const D p = pa * pb;
    const D s = p + pc;
    const D bb = s - p;
    const D e = (p - (s - bb)) + (pc - bb);
    const L sb = (L)s;
    const UL opposite = ((UL)((L)e ^ sb)) >> 63;  // 1 where e and s differ in sign
    // Unsigned: computed in every lane, used only where inexact (-0.0's bits minus 1 would be a
    // signed overflow, which UBSan reports).
    const L odd = (L)(((UL)sb - opposite) | 1);
    const D as = (D)(sb & INT64_MAX);
    const L inexact = (e != 0.0) & (as < D{} + INFINITY);
    return __builtin_convertvector((D)((inexact & odd) | (~inexact & sb)), F);
  }
  M lt(F a, F b) const { return a < b; }
  M nlt(F a, F b) const { return ~(a < b); }
  M le(F a, F b) const { return a <= b; }
  M gt(F a, F b) const { return a > b; }
  M ge(F a, F b) const { return a >= b; }
  M eq(F a, F b) const { return a == b; }
  M unord(F a, F b) const { return (a != a) | (b != b); }
  M mask_and(M a, M b) const { return a & b; }
  M mask_or(M a, M b) const { return a | b; }
  M mask_not(M a) const { return ~a; }
  F select(M m, F a, F b) const { return (F)((m & (I)a) | (~m & (I)b)); }
  F keep(M m, F a) const { return (F)(m & (I)a); }
  F lt_select(F a, F b) const { return select(a < b, a, b); }
  F gt_select(F a, F b) const { return select(a > b, a, b); }
  F bit_and(F a, F b) const { return (F)((I)a & (I)b); }
  F bit_or(F a, F b) const { return (F)((I)a | (I)b); }
  F bit_xor(F a, F b) const { return (F)((I)a ^ (I)b); }
  F bit_andnot(F a, F b) const { return (F)(~(I)a & (I)b); }
  I as_int(F a) const { return (I)a; }
  F as_float(I a) const { return (F)a; }
  I isplat(int64_t c) const { return (I)(U{} | static_cast<UT>(static_cast<IT>(c))); }
  I iadd(I a, I b) const { return (I)((U)a + (U)b); }
  I isub(I a, I b) const { return (I)((U)a - (U)b); }
  I shl(I a, int n) const { return (I)((U)a << n); }
  I shr(I a, int n) const { return (I)((U)a >> n); }

  // Optional (sin_cos.h): the lanes with bound < |x| < inf get r and the quadrant k of the exact
  // reduction (reduce_pio2.h, scalar, lane by lane); the others keep theirs. bound >= 2^-8.
  void reduce_pio2_huge(F x, double bound, F& r, I& k) const {
    const F ax = (F)(~(I)splat(-0.0) & (I)x);
    const I huge = (ax > T(bound)) & (ax < T(INFINITY));
    bool any = false;
    for (int i = 0; i < kLanes; ++i) any |= huge[i] != 0;
    if (!any) return;
    T xs[kLanes], rs[kLanes];
    IT ks[kLanes];
    store(xs, x);
    store(rs, r);
    std::memcpy(ks, &k, sizeof(I));
    reduce_pio2_huge_lanes(xs, kLanes, bound, rs, ks);
    r = load(rs);
    std::memcpy(&k, ks, sizeof(I));
  }
};

// The vector width of the translation unit's ISA: the eager kernels use one vector register.
#if defined(__AVX512F__)
inline constexpr int kNativeVecBytes = 64;
#elif defined(__AVX2__)
inline constexpr int kNativeVecBytes = 32;
#else
inline constexpr int kNativeVecBytes = 16;
#endif

}  // namespace kiln::vecmath

namespace kiln::vecmath {

// fn applied to the n elements of in (contiguous), written to out (may alias in): full vectors,
// then the tail through a zero-padded vector (lane-wise, so the same bits as a full vector).
template <class T, int W, class Fn, class Isa = NativeIsa>
[[gnu::flatten]] inline void map_contiguous(const T* in, T* out, int64_t n, Fn fn) {
  using O = GnuVecOps<T, W, Isa>;
  constexpr int L = O::kLanes;
  const O o;
  int64_t i = 0;
  for (; i + L <= n; i += L) O::store(out + i, fn(o, O::load(in + i)));
  if (i < n) {
    T buf[L] = {};
    for (int64_t j = i; j < n; ++j) buf[j - i] = in[j];
    O::store(buf, fn(o, O::load(buf)));
    for (int64_t j = i; j < n; ++j) out[j] = buf[j - i];
  }
}

// fn of two operands, lane by lane: a and b contiguous, or one of them a broadcast value
// (a_step / b_step 0 or 1); the tail through zero-padded vectors as map_contiguous.
template <class T, int W, class Fn, class Isa = NativeIsa>
[[gnu::flatten]] inline void map_contiguous2(const T* a, int64_t a_step, const T* b, int64_t b_step,
                                             T* out, int64_t n, Fn fn) {
  using O = GnuVecOps<T, W, Isa>;
  constexpr int L = O::kLanes;
  const O o;
  if (n <= 0) return;
  const typename O::F av = o.splat(a[0]), bv = o.splat(b[0]);
  int64_t i = 0;
  for (; i + L <= n; i += L)
    O::store(out + i, fn(o, a_step ? O::load(a + i) : av, b_step ? O::load(b + i) : bv));
  if (i < n) {
    T ba[L] = {}, bb[L] = {};
    for (int64_t j = i; j < n; ++j) ba[j - i] = a[j * a_step], bb[j - i] = b[j * b_step];
    O::store(ba, fn(o, O::load(ba), O::load(bb)));
    for (int64_t j = i; j < n; ++j) out[j] = ba[j - i];
  }
}

// fn of one scalar, through lane 0 of a 16-byte vector: the same bits as every vector path.
template <class T, class Fn, class Isa = NativeIsa>
inline T apply_scalar(T x, Fn fn) {
  using O = GnuVecOps<T, 16, Isa>;
  const O o;
  T buf[O::kLanes] = {};
  buf[0] = x;
  O::store(buf, fn(o, O::load(buf)));
  return buf[0];
}
template <class T, class Fn, class Isa = NativeIsa>
inline T apply_scalar2(T a, T b, Fn fn) {
  using O = GnuVecOps<T, 16, Isa>;
  const O o;
  T ba[O::kLanes] = {}, bb[O::kLanes] = {};
  ba[0] = a;
  bb[0] = b;
  O::store(ba, fn(o, O::load(ba), O::load(bb)));
  return ba[0];
}

}  // namespace kiln::vecmath
