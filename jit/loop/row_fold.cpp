#include "jit/loop/row_fold.h"

#include <cstring>
#include <limits>
#include <vector>

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

  // A piece of `len` values, the first `vec` in lanes.
  T piece(int64_t len, int64_t vec) {
    const T* p = x;
    x += len;
    const int lanes = reduce_lanes(op, sizeof(T) == 4 ? DType::Float32 : DType::Float64);
    T lane[8];
    for (int k = 0; k < lanes; ++k) lane[k] = identity();
    T s = identity();
    if (extreme()) {
      // SSE2 max / min: the lane unless it is strictly better, else the new value; NaNs are
      // tracked apart and make the whole piece the default NaN.
      bool nan = false;
      for (int64_t i = 0; i < vec; ++i) {
        const T v = p[i];
        T& l = lane[i % lanes];
        nan = nan || v != v;
        l = op == ExprOp::ReduceMax ? (l > v ? l : v) : (l < v ? l : v);
      }
      if (nan) return std::numeric_limits<T>::quiet_NaN();
      if (vec > 0)
        for (int k = 0; k < lanes; ++k) s = apply(s, lane[k]);
    } else {
      for (int64_t i = 0; i < vec; ++i) lane[i % 8] = apply(lane[i % 8], p[i]);
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
