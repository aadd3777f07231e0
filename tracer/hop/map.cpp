// map: fn over the slices of xs along dim 0, each output stacked along a new dim 0 (scan without
// a carry). Autograd flows through the ops the steps ran.
#include <fmt/format.h>

#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/stacking.h"
#include "tracer/hop/traced.h"

namespace kiln {

namespace hop {

TensorList run_map_eagerly(const Fn& fn, const TensorList& xs) {
  int64_t steps = leading_length("map", xs);
  std::vector<TensorList> per_step;
  per_step.reserve(static_cast<size_t>(steps));
  for (int64_t t = 0; t < steps; ++t) {
    TensorList out = fn(slices_at(xs, t));
    std::string what = fmt::format("fn at step {}", t);
    if (t == 0)
      check_defined_outputs("map", what.c_str(), out);
    else
      check_outputs_match("map", what.c_str(), out, "step 0's output", per_step.front());
    per_step.push_back(std::move(out));
  }
  return stack_steps(per_step);
}

}  // namespace hop

TensorList map(Fn fn, const TensorList& xs) {
  hop::check_callable("map", "fn", static_cast<bool>(fn));
  hop::check_defined_inputs("map", "xs", xs);
  hop::leading_length("map", xs);  // xs non-empty, one shared length T >= 1
  if (auto traced = hop::traced_map(fn, xs)) return *traced;
  return hop::run_map_eagerly(fn, xs);
}

}  // namespace kiln
