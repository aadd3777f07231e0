// scan: a loop with a fixed number of steps T (the length of xs along dim 0), threading a carry
// through fn and stacking the per-step outputs. Autograd flows through the ops the steps ran.
#include <fmt/format.h>

#include "ops/functions.h"
#include "runtime/error.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/stacking.h"
#include "tracer/hop/traced.h"

namespace kiln {

namespace hop {

std::pair<TensorList, TensorList> run_scan_eagerly(const ScanFn& fn, const TensorList& init,
                                                   const TensorList& xs) {
  int64_t steps = leading_length("scan", xs);
  TensorList carry = init;
  std::vector<TensorList> ys_per_step;
  ys_per_step.reserve(static_cast<size_t>(steps));
  for (int64_t t = 0; t < steps; ++t) {
    auto [next, ys] = fn(carry, slices_at(xs, t));
    check_outputs_match("scan", "fn's new carry", next, "init", init);
    std::string what = fmt::format("fn's ys at step {}", t);
    if (t == 0)
      check_defined_outputs("scan", what.c_str(), ys);
    else
      check_outputs_match("scan", what.c_str(), ys, "step 0's ys", ys_per_step.front());
    carry = std::move(next);
    ys_per_step.push_back(std::move(ys));
  }
  return {std::move(carry), stack_steps(ys_per_step)};
}

}  // namespace hop

std::pair<TensorList, TensorList> scan(
    std::function<std::pair<TensorList, TensorList>(const TensorList& carry, const TensorList& x)>
        fn,
    const TensorList& init, const TensorList& xs) {
  hop::check_callable("scan", "fn", static_cast<bool>(fn));
  hop::check_defined_inputs("scan", "init", init);
  hop::check_defined_inputs("scan", "xs", xs);
  hop::leading_length("scan", xs);  // xs non-empty, one shared length T >= 1
  if (auto traced = hop::traced_scan(fn, init, xs)) return *traced;
  return hop::run_scan_eagerly(fn, init, xs);
}

}  // namespace kiln
