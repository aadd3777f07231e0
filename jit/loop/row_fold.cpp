#include "jit/loop/row_fold.h"

#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "jit/loop/row_program.h"
#include "runtime/error.h"

namespace kiln::jit {

namespace {

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
        return a + b;
      case ExprOp::ReduceProd:
        return a * b;
      case ExprOp::ReduceMax:
        return (a > b || a != a) ? a : b;
      default:
        return (a < b || a != a) ? a : b;
    }
  }

  // The 8 lanes of a sum (kSum) or product over p[0, vec) (vec a multiple of 8), from the
  // identity. In registers: GCC's vector types kept them on the stack, a store-to-load round trip
  // per vector.
  template <bool kSum>
  void sum_lanes(const T* p, int64_t vec, T* out) const {
#if defined(__SSE2__)
    if constexpr (sizeof(T) == 4) {
      __m128 a0 = _mm_set1_ps(identity()), a1 = a0;
      for (int64_t i = 0; i < vec; i += 8) {
        const __m128 v0 = _mm_loadu_ps(p + i), v1 = _mm_loadu_ps(p + i + 4);
        a0 = kSum ? _mm_add_ps(a0, v0) : _mm_mul_ps(a0, v0);
        a1 = kSum ? _mm_add_ps(a1, v1) : _mm_mul_ps(a1, v1);
      }
      _mm_storeu_ps(out, a0);
      _mm_storeu_ps(out + 4, a1);
    } else {
      __m128d a[4];
      for (auto& v : a) v = _mm_set1_pd(identity());
      for (int64_t i = 0; i < vec; i += 8)
        for (int r = 0; r < 4; ++r) {
          const __m128d v = _mm_loadu_pd(p + i + 2 * r);
          a[r] = kSum ? _mm_add_pd(a[r], v) : _mm_mul_pd(a[r], v);
        }
      for (int r = 0; r < 4; ++r) _mm_storeu_pd(out + 2 * r, a[r]);
    }
#else
    for (int k = 0; k < 8; ++k) out[k] = identity();
    for (int64_t i = 0; i < vec; ++i) out[i % 8] = kSum ? out[i % 8] + p[i] : out[i % 8] * p[i];
#endif
  }

  // The lanes of max (kMax) or min over p[0, vec) (vec a multiple of the lanes), from the
  // identity; true where a value was NaN.
  template <bool kMax>
  bool extreme_lanes(const T* p, int64_t vec, T* out) const {
#if defined(__SSE2__)
    if constexpr (sizeof(T) == 4) {
      __m128 a0 = _mm_set1_ps(identity()), a1 = a0, u = _mm_setzero_ps();
      for (int64_t i = 0; i < vec; i += 8) {
        const __m128 v0 = _mm_loadu_ps(p + i), v1 = _mm_loadu_ps(p + i + 4);
        a0 = kMax ? _mm_max_ps(a0, v0) : _mm_min_ps(a0, v0);
        a1 = kMax ? _mm_max_ps(a1, v1) : _mm_min_ps(a1, v1);
        u = _mm_or_ps(u, _mm_or_ps(_mm_cmpunord_ps(v0, v0), _mm_cmpunord_ps(v1, v1)));
      }
      _mm_storeu_ps(out, a0);
      _mm_storeu_ps(out + 4, a1);
      return _mm_movemask_ps(u) != 0;
    } else {
      __m128d a0 = _mm_set1_pd(identity()), a1 = a0, u = _mm_setzero_pd();
      for (int64_t i = 0; i < vec; i += 4) {
        const __m128d v0 = _mm_loadu_pd(p + i), v1 = _mm_loadu_pd(p + i + 2);
        a0 = kMax ? _mm_max_pd(a0, v0) : _mm_min_pd(a0, v0);
        a1 = kMax ? _mm_max_pd(a1, v1) : _mm_min_pd(a1, v1);
        u = _mm_or_pd(u, _mm_or_pd(_mm_cmpunord_pd(v0, v0), _mm_cmpunord_pd(v1, v1)));
      }
      _mm_storeu_pd(out, a0);
      _mm_storeu_pd(out + 2, a1);
      return _mm_movemask_pd(u) != 0;
    }
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
  // values k, k + lanes, ... Whole vectors of lanes in GCC's vector types (the same IEEE
  // operation per lane, so the same bits, about an element a cycle faster than lane by lane).
  T piece(int64_t len, int64_t vec) {
    const T* p = x;
    x += len;
    T s = identity();
    if (extreme()) {
      // SSE2 max / min (the lane unless it is strictly better, else the new value: maxps and
      // minps exactly), NaNs tracked apart by an unordered compare: a NaN makes the whole piece
      // the default NaN. GCC's vector types left this loop scalar (a compare and a move a lane).
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

}  // namespace

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
