#include "tracer/hop/stacking.h"

#include "ops/functions.h"
#include "runtime/error.h"
#include "tracer/hop/hop_checks.h"

namespace kiln::hop {

int64_t leading_length(const char* op, const TensorList& xs) {
  KILN_CHECK(!xs.empty(), "{}: xs is empty; pass at least one tensor to iterate over along dim 0",
             op);
  int64_t steps = -1;
  for (size_t i = 0; i < xs.size(); ++i) {
    const TensorImpl* x = xs[i].impl();
    KILN_CHECK(x->dim() >= 1, "{}: xs[{}] is a 0-dim tensor ({}); it has no dim 0 to iterate over",
               op, i, describe_meta(hop_meta(xs[i])));
    int64_t n = x->sizes()[0];
    if (i == 0) steps = n;
    KILN_CHECK(n == steps,
               "{}: every xs must have the same length along dim 0: xs[0] has {} ({}) but xs[{}] "
               "has {} ({})",
               op, steps, describe_meta(hop_meta(xs[0])), i, n, describe_meta(hop_meta(xs[i])));
  }
  KILN_CHECK(steps >= 1,
             "{}: xs have length 0 along dim 0; at least one step is needed (the shapes of the "
             "outputs are unknown without one)",
             op);
  return steps;
}

TensorList slices_at(const TensorList& xs, int64_t t) {
  TensorList out;
  out.reserve(xs.size());
  for (const Tensor& x : xs) out.push_back(x.select(0, t));
  return out;
}

TensorList stack_steps(const std::vector<TensorList>& per_step) {
  TensorList out;
  size_t n = per_step.front().size();
  out.reserve(n);
  std::vector<Tensor> column(per_step.size());
  for (size_t j = 0; j < n; ++j) {
    for (size_t t = 0; t < per_step.size(); ++t) column[t] = per_step[t][j];
    out.push_back(stack(column, 0));
  }
  return out;
}

}  // namespace kiln::hop
