#include "jit/loop/row_fold.h"

#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "jit/loop/row_program.h"
#include "runtime/error.h"

namespace kiln::jit {

namespace {

// x86's rule for an arithmetic operation on NaNs (SSE and AVX alike): the first operand's NaN,
// quieted, else the second's; a NaN made from numbers (inf - inf, 0 * inf) is the default NaN,
// whatever the order. C++ leaves the order to the compiler (it may swap the operands of a
// commutative operation), so the fold spells the rule out: `a` is the rendered kernels' first
// operand (the accumulator, the earlier result). `r`: a op b.
template <class T>
T quiet(T a) {
  if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &a, 4);
    u |= 0x00400000u;
    std::memcpy(&a, &u, 4);
  } else {
    uint64_t u;
    std::memcpy(&u, &a, 8);
    u |= 0x0008000000000000ull;
    std::memcpy(&a, &u, 8);
  }
  return a;
}
template <class T>
T nan_first(T a, T b, T r) {
  if (a != a) return quiet(a);
  if (b != b) return quiet(b);
  return r;
}

#if defined(__SSE2__)
// One SSE2 register of T and the operations the folds use, for float and double alike.
template <class T>
struct Sse;
template <>
struct Sse<float> {
  using V = __m128;
  static constexpr int kWidth = 4;
  static V set1(float x) { return _mm_set1_ps(x); }
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V max(V a, V b) { return _mm_max_ps(a, b); }
  static V min(V a, V b) { return _mm_min_ps(a, b); }
  static V unord(V a) { return _mm_cmpunord_ps(a, a); }
  static V bit_or(V a, V b) { return _mm_or_ps(a, b); }
  // m ? a : b, m a compare's mask
  static V select(V m, V a, V b) { return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b)); }
  static V quiet_bit() { return _mm_castsi128_ps(_mm_set1_epi32(0x00400000)); }
  static bool any(V m) { return _mm_movemask_ps(m) != 0; }
};
template <>
struct Sse<double> {
  using V = __m128d;
  static constexpr int kWidth = 2;
  static V set1(double x) { return _mm_set1_pd(x); }
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
  static V add(V a, V b) { return _mm_add_pd(a, b); }
  static V mul(V a, V b) { return _mm_mul_pd(a, b); }
  static V max(V a, V b) { return _mm_max_pd(a, b); }
  static V min(V a, V b) { return _mm_min_pd(a, b); }
  static V unord(V a) { return _mm_cmpunord_pd(a, a); }
  static V bit_or(V a, V b) { return _mm_or_pd(a, b); }
  static V select(V m, V a, V b) { return _mm_or_pd(_mm_and_pd(m, a), _mm_andnot_pd(m, b)); }
  static V quiet_bit() { return _mm_castsi128_pd(_mm_set1_epi64x(0x0008000000000000LL)); }
  static bool any(V m) { return _mm_movemask_pd(m) != 0; }
};
#endif

template <class T>
struct Fold {
  ExprOp op;
  const T* x;  // the next value a piece takes
  std::vector<T> stack;

  bool extreme() const { return op == ExprOp::ReduceMax || op == ExprOp::ReduceMin; }
  T identity() const {
    switch (op) {
      case ExprOp::ReduceSum:
        return T(0);
      case ExprOp::ReduceProd:
        return T(1);
      case ExprOp::ReduceMax:
        return -std::numeric_limits<T>::infinity();
      default:
        return std::numeric_limits<T>::infinity();
    }
  }
  // Combines two results, the earlier on the left (max_nan / min_nan: a NaN on the left wins,
  // else the right one unless the left is strictly better).
  T apply(T a, T b) const {
    switch (op) {
      case ExprOp::ReduceSum:
        return nan_first(a, b, a + b);
      case ExprOp::ReduceProd:
        return nan_first(a, b, a * b);
      case ExprOp::ReduceMax:
        return (a > b || a != a) ? a : b;
      default:
        return (a < b || a != a) ? a : b;
    }
  }

  // The 8 lanes of a sum (kSum) or product over p[0, vec) (vec a multiple of 8), from the
  // identity, in SSE2 registers (GCC's vector types kept them on the stack: a store-to-load round
  // trip per vector). Each lane as nan_first: the accumulator's NaN (quieted), else the value's,
  // else a op v.
  template <bool kSum>
  void sum_lanes(const T* p, int64_t vec, T* out) const {
#if defined(__SSE2__)
    using S = Sse<T>;
    constexpr int kRegs = 8 / S::kWidth;
    const typename S::V q = S::quiet_bit();
    typename S::V a[kRegs];
    for (auto& r : a) r = S::set1(identity());
    for (int64_t i = 0; i < vec; i += 8)
      for (int r = 0; r < kRegs; ++r) {
        const typename S::V v = S::load(p + i + r * S::kWidth);
        typename S::V x = kSum ? S::add(a[r], v) : S::mul(a[r], v);
        x = S::select(S::unord(v), S::bit_or(v, q), x);
        a[r] = S::select(S::unord(a[r]), S::bit_or(a[r], q), x);
      }
    for (int r = 0; r < kRegs; ++r) S::store(out + r * S::kWidth, a[r]);
#else
    for (int k = 0; k < 8; ++k) out[k] = identity();
    for (int64_t i = 0; i < vec; ++i) out[i % 8] = apply(out[i % 8], p[i]);
#endif
  }

  // The lanes (two SSE2 registers: eager's range_extreme) of max (kMax) or min over p[0, vec)
  // (vec a multiple of the lanes), from the identity; true where a value was NaN.
  template <bool kMax>
  bool extreme_lanes(const T* p, int64_t vec, T* out) const {
#if defined(__SSE2__)
    using S = Sse<T>;
    typename S::V a0 = S::set1(identity()), a1 = a0, u = S::unord(S::set1(0));
    for (int64_t i = 0; i < vec; i += 2 * S::kWidth) {
      const typename S::V v0 = S::load(p + i), v1 = S::load(p + i + S::kWidth);
      a0 = kMax ? S::max(a0, v0) : S::min(a0, v0);
      a1 = kMax ? S::max(a1, v1) : S::min(a1, v1);
      u = S::bit_or(u, S::bit_or(S::unord(v0), S::unord(v1)));
    }
    S::store(out, a0);
    S::store(out + S::kWidth, a1);
    return S::any(u);
#else
    constexpr int kLanes = sizeof(T) == 4 ? 8 : 4;
    bool nan = false;
    for (int k = 0; k < kLanes; ++k) out[k] = identity();
    for (int64_t i = 0; i < vec; ++i) {
      const T v = p[i];
      T& l = out[i % kLanes];
      nan = nan || v != v;
      l = kMax ? (l > v ? l : v) : (l < v ? l : v);
    }
    return nan;
#endif
  }

  // A piece of `len` values, the first `vec` (a multiple of the lanes) in lanes: lane k takes
  // values k, k + lanes, ... (sum_lanes, extreme_lanes: the same IEEE operation per lane as lane
  // by lane, so the same bits, 8-12x faster).
  T piece(int64_t len, int64_t vec) {
    const T* p = x;
    x += len;
    T s = identity();
    if (extreme()) {
      // SSE2 max / min (the lane unless it is strictly better, else the new value: maxps and
      // minps exactly), NaNs tracked apart by an unordered compare: a NaN makes the whole piece
      // the default NaN (GCC's vector types left this loop scalar: a compare and a move a lane).
      constexpr int kLanes = sizeof(T) == 4 ? 8 : 4;  // reduce_lanes: two SSE2 registers
      T lanes[kLanes];
      bool nan = false;
      if (op == ExprOp::ReduceMax)
        nan = extreme_lanes<true>(p, vec, lanes);
      else
        nan = extreme_lanes<false>(p, vec, lanes);
      if (nan) return std::numeric_limits<T>::quiet_NaN();
      if (vec > 0)
        for (int k = 0; k < kLanes; ++k) s = apply(s, lanes[k]);
    } else {
      T lane[8];
      if (op == ExprOp::ReduceSum)
        sum_lanes<true>(p, vec, lane);
      else
        sum_lanes<false>(p, vec, lane);
      s = apply(apply(apply(lane[0], lane[1]), apply(lane[2], lane[3])),
                apply(apply(lane[4], lane[5]), apply(lane[6], lane[7])));
    }
    for (int64_t i = vec; i < len; ++i) s = apply(s, p[i]);
    return s;
  }

  void run(const int64_t* w) {
    for (size_t i = 0;;) {
      switch (w[i]) {
        case 0:
          return;
        case 1:
          stack.push_back(piece(w[i + 1], w[i + 2]));
          i += 3;
          break;
        case 2: {
          KILN_CHECK(stack.size() >= 2, "row fold: a combine of {} results", stack.size());
          const T b = stack.back();
          stack.pop_back();
          stack.back() = apply(stack.back(), b);
          i += 1;
          break;
        }
        case 3: {
          T v;
          std::memcpy(&v, reinterpret_cast<const void*>(static_cast<uintptr_t>(w[i + 1])),
                      sizeof v);
          stack.push_back(v);
          i += 2;
          break;
        }
        case 4:
          KILN_CHECK(!stack.empty(), "row fold: a pop of no result");
          std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(w[i + 1])), &stack.back(),
                      sizeof(T));
          stack.pop_back();
          i += 2;
          break;
        case 5:
          run(reinterpret_cast<const int64_t*>(static_cast<uintptr_t>(w[i + 1])));
          i += 2;
          break;
        default:
          KILN_CHECK(false, "row fold: no program word {}", w[i]);
      }
    }
  }
};

template <class T>
uint64_t fold_typed(ExprOp op, const int64_t* program, const void* values) {
  Fold<T> f{op, static_cast<const T*>(values), {}};
  f.run(program);
  uint64_t bits = 0;
  // The last result left is the row's (after pops, a dummy: row_program_chunks).
  const T r = f.stack.empty() ? f.identity() : f.stack.back();
  std::memcpy(&bits, &r, sizeof r);
  return bits;
}

template <class T>
int64_t first_typed(const T* f, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (f[i] != T(0)) return i;  // NaN != 0
  return n;
}

template <class T>
T column_identity(ExprOp op) {
  if constexpr (std::is_floating_point_v<T>) {
    return Fold<T>{op, nullptr, {}}.identity();
  } else {
    return op == ExprOp::ReduceProd ? T(1) : T(0);
  }
}

// apply() of Fold for floats; a wrapping sum for Int64.
template <class T>
T column_apply(ExprOp op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return Fold<T>{op, nullptr, {}}.apply(a, b);
  } else {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
}

// The column code per op: the op a compile-time constant, so each loop over the columns is
// straight arithmetic.
template <class T, class Body>
void with_column_op(ExprOp op, const Body& body) {
  switch (op) {
    case ExprOp::ReduceSum:
      body(std::integral_constant<ExprOp, ExprOp::ReduceSum>{});
      break;
    case ExprOp::ReduceProd:
      body(std::integral_constant<ExprOp, ExprOp::ReduceProd>{});
      break;
    case ExprOp::ReduceMax:
      body(std::integral_constant<ExprOp, ExprOp::ReduceMax>{});
      break;
    default:
      body(std::integral_constant<ExprOp, ExprOp::ReduceMin>{});
  }
}

template <class T>
void fold_piece_typed(ExprOp op, const T* x, int64_t len, int64_t w, T* level) {
  with_column_op<T>(op, [&](auto o) {
    const T id = column_identity<T>(o.value);
    for (int64_t c = 0; c < w; ++c) level[c] = id;
    for (int64_t r = 0; r < len; ++r)
      for (int64_t c = 0; c < w; ++c) level[c] = column_apply<T>(o.value, level[c], x[r * w + c]);
  });
}

template <class T>
void combine_typed(ExprOp op, T* earlier, const T* later, int64_t w) {
  with_column_op<T>(op, [&](auto o) {
    for (int64_t c = 0; c < w; ++c) earlier[c] = column_apply<T>(o.value, earlier[c], later[c]);
  });
}

// Eager's better(): whether v replaces the best so far (a NaN best stays; a NaN v wins).
bool better(ExprOp op, double v, double best) {
  if (best != best) return false;
  if (v != v) return true;
  return op == ExprOp::ReduceArgMax ? v > best : v < best;
}

}  // namespace

void fold_column_piece(ExprOp op, DType type, const void* values, int64_t len, int64_t w,
                       void* level) {
  switch (type) {
    case DType::Float32:
      return fold_piece_typed(op, static_cast<const float*>(values), len, w,
                              static_cast<float*>(level));
    case DType::Float64:
      return fold_piece_typed(op, static_cast<const double*>(values), len, w,
                              static_cast<double*>(level));
    case DType::Int64:
      KILN_CHECK(op == ExprOp::ReduceSum, "column fold: {} of Int64 (sums only)", expr_op_name(op));
      return fold_piece_typed(op, static_cast<const int64_t*>(values), len, w,
                              static_cast<int64_t*>(level));
    default:
      KILN_CHECK(false, "column fold: {} over {}", expr_op_name(op), dtype_name(type));
  }
}

void combine_column_levels(ExprOp op, DType type, void* earlier, const void* later, int64_t w) {
  switch (type) {
    case DType::Float32:
      return combine_typed(op, static_cast<float*>(earlier), static_cast<const float*>(later), w);
    case DType::Float64:
      return combine_typed(op, static_cast<double*>(earlier), static_cast<const double*>(later), w);
    case DType::Int64:
      return combine_typed(op, static_cast<int64_t*>(earlier), static_cast<const int64_t*>(later),
                           w);
    default:
      KILN_CHECK(false, "column fold: {} over {}", expr_op_name(op), dtype_name(type));
  }
}

void fold_column_piece_arg(ExprOp op, const double* values, int64_t len, int64_t w,
                           int64_t first_row, void* level) {
  auto* best = static_cast<double*>(level);
  auto* row = reinterpret_cast<int64_t*>(best + w);
  for (int64_t c = 0; c < w; ++c) {
    best[c] = op == ExprOp::ReduceArgMax ? -std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::infinity();
    row[c] = -1;
  }
  for (int64_t r = 0; r < len; ++r)
    for (int64_t c = 0; c < w; ++c) {
      const double v = values[r * w + c];
      if (row[c] < 0 || better(op, v, best[c])) {
        best[c] = v;
        row[c] = first_row + r;
      }
    }
}

void combine_column_levels_arg(ExprOp op, void* earlier, const void* later, int64_t w) {
  auto* best = static_cast<double*>(earlier);
  auto* row = reinterpret_cast<int64_t*>(best + w);
  const auto* best2 = static_cast<const double*>(later);
  const auto* row2 = reinterpret_cast<const int64_t*>(best2 + w);
  for (int64_t c = 0; c < w; ++c)
    if (row2[c] >= 0 && (row[c] < 0 || better(op, best2[c], best[c]))) {
      best[c] = best2[c];
      row[c] = row2[c];
    }
}

uint64_t fold_row(ExprOp op, DType type, const int64_t* program, const void* values) {
  KILN_CHECK(op == ExprOp::ReduceSum || op == ExprOp::ReduceProd || op == ExprOp::ReduceMax ||
                 op == ExprOp::ReduceMin,
             "row fold: {} is not a folded reduction", expr_op_name(op));
  switch (type) {
    case DType::Float32:
      return fold_typed<float>(op, program, values);
    case DType::Float64:
      return fold_typed<double>(op, program, values);
    default:
      KILN_CHECK(false, "row fold: {} over {} (float types only)", expr_op_name(op),
                 dtype_name(type));
  }
  return 0;
}

int64_t first_nonzero(DType type, const void* flags, int64_t n) {
  KILN_CHECK(type == DType::Float32 || type == DType::Float64,
             "row fold: ReduceFirst of {} flags (float only)", dtype_name(type));
  return type == DType::Float32 ? first_typed(static_cast<const float*>(flags), n)
                                : first_typed(static_cast<const double*>(flags), n);
}

}  // namespace kiln::jit
