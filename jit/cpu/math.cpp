#include "jit/cpu/math.h"

#include <limits>

namespace kiln::jit {

bool cpu_math_supported(ExprOp op) {
  switch (op) {
    case ExprOp::Exp:
    case ExprOp::Log:
    case ExprOp::Log1p:
    case ExprOp::Expm1:
    case ExprOp::Tanh:
    case ExprOp::Sigmoid:
    case ExprOp::Silu:
    case ExprOp::Erf:
    case ExprOp::Sin:
    case ExprOp::Cos:
    case ExprOp::Gelu:
    case ExprOp::GeluTanh:
      return true;
    default:
      return false;
  }
}

bool exp_input_may_be_masked(const LoopKernel& k, int32_t id) {
  auto op_of = [&](int32_t i) { return k.exprs[static_cast<size_t>(i)].op; };
  // A row's max, or logsumexp's shift (0 where the max is infinite, else the max).
  auto row_max = [&](int32_t i) {
    if (op_of(i) == ExprOp::ReduceMax) return true;
    const Expr& e = k.exprs[static_cast<size_t>(i)];
    return e.op == ExprOp::Select &&
           (op_of(e.b) == ExprOp::ReduceMax || op_of(e.c) == ExprOp::ReduceMax);
  };
  // A few levels up: the pattern sits right above the exp (select, minus the row max, a scale).
  auto walk = [&](auto& self, int32_t i, int depth) -> bool {
    if (i < 0 || depth > 6) return false;
    const Expr& e = k.exprs[static_cast<size_t>(i)];
    switch (e.op) {
      case ExprOp::Const:  // -inf, or far below where exp underflows (exp_log.h's kLo)
        return e.value < (e.type == DType::Float64 ? -708.0 : -87.0);
      case ExprOp::Select:
        return self(self, e.b, depth + 1) || self(self, e.c, depth + 1);
      case ExprOp::Sub:  // x - max(x): softmax's scores, which may hold a loaded mask
        return row_max(e.b) || self(self, e.a, depth + 1);
      case ExprOp::Add:
      case ExprOp::Mul:
        return self(self, e.a, depth + 1) || self(self, e.b, depth + 1);
      default:
        return false;
    }
  };
  return walk(walk, id, 0);
}

}  // namespace kiln::jit
