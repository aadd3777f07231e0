#include "ops/pointwise_rules.h"

#include "ops/meta_helpers.h"
#include "runtime/error.h"

namespace kiln {

DTypeRule unary_dtype_rule(OpId id) {
  switch (id) {
    case OpId::Neg:
    case OpId::Abs:
    case OpId::Relu:
    case OpId::Floor:
    case OpId::Ceil:
    case OpId::Round:
    case OpId::PowScalar:
    case OpId::Clamp:
    case OpId::Square:
      return DTypeRule::Numeric;
    case OpId::Sign:
      return DTypeRule::Any;
    case OpId::Isnan:
      return DTypeRule::BoolOut;
    case OpId::LogicalNot:
      return DTypeRule::BoolIn;
    default:
      return DTypeRule::Floating;
  }
}

DTypeRule binary_dtype_rule(OpId id) {
  switch (id) {
    case OpId::Div:
      return DTypeRule::Floating;
    case OpId::Sub:
    case OpId::Pow:
      return DTypeRule::Numeric;
    case OpId::Eq:
    case OpId::Ne:
    case OpId::Lt:
    case OpId::Le:
    case OpId::Gt:
    case OpId::Ge:
      return DTypeRule::BoolOut;
    case OpId::LogicalAnd:
    case OpId::LogicalOr:
      return DTypeRule::BoolIn;
    default:
      return DTypeRule::Any;
  }
}

DType pointwise_compute_dtype(OpId id, DTypeRule r, DType in, const char* what) {
  switch (r) {
    case DTypeRule::Floating:
      return to_floating(in);
    case DTypeRule::Numeric:
      KILN_CHECK(in != DType::Bool, "{}: not supported for Bool {} (expected a numeric dtype)",
                 op_name(id), what);
      return in;
    case DTypeRule::BoolIn:
      return DType::Bool;
    default:
      return in;
  }
}

DType pointwise_out_dtype(DTypeRule r, DType compute) {
  return (r == DTypeRule::BoolOut || r == DTypeRule::BoolIn) ? DType::Bool : compute;
}

}  // namespace kiln
