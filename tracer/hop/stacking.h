// Helpers shared by scan and map: the step count of xs and the per-step slices, and stacking the
// per-step outputs along a new dim 0.
#pragma once
#include <cstdint>
#include <vector>

#include "tracer/hop/hop.h"

namespace kiln::hop {

// The shared length T of every xs along dim 0. xs must be non-empty, every tensor must have at
// least one dim, and T >= 1 (with no step, the shapes of the outputs are unknown).
int64_t leading_length(const char* op, const TensorList& xs);

// xs[i].select(0, t) for each i.
TensorList slices_at(const TensorList& xs, int64_t t);

// out[j] = stack(per_step[t][j] for all t, 0). per_step is non-empty and rectangular.
TensorList stack_steps(const std::vector<TensorList>& per_step);

}  // namespace kiln::hop
