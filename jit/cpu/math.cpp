#include "jit/cpu/math.h"

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

}  // namespace kiln::jit
