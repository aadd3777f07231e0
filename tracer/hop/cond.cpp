// cond: runs one of two branches on the same operands, chosen by a one-element predicate.
#include "runtime/error.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/traced.h"

namespace kiln {

namespace hop {

TensorList run_cond_eagerly(const Tensor& pred, const Fn& true_fn, const Fn& false_fn,
                            const TensorList& operands) {
  // Eagerly only the taken branch runs, so the branches' outputs cannot be compared here; the
  // traced form compares them (check_same_outputs).
  bool taken = read_predicate("cond", "pred", pred);
  TensorList out = taken ? true_fn(operands) : false_fn(operands);
  check_defined_outputs("cond", taken ? "true_fn" : "false_fn", out);
  return out;
}

}  // namespace hop

TensorList cond(const Tensor& pred, Fn true_fn, Fn false_fn, const TensorList& operands) {
  hop::check_callable("cond", "true_fn", static_cast<bool>(true_fn));
  hop::check_callable("cond", "false_fn", static_cast<bool>(false_fn));
  KILN_CHECK(pred.defined(), "cond: pred is an undefined tensor");
  hop::check_defined_inputs("cond", "operands", operands);
  if (auto traced = hop::traced_cond(pred, true_fn, false_fn, operands)) return *traced;
  return hop::run_cond_eagerly(pred, true_fn, false_fn, operands);
}

}  // namespace kiln
