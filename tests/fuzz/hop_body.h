// Evaluating a fuzzer body (tests/fuzz/hop_program.h) as a higher-order op's callable.
#pragma once
#include "fuzz/hop_program.h"
#include "kiln/kiln.h"

namespace kiln::fuzz {

Shape broadcast_shape(const Shape& a, const Shape& b);
// The arguments' common (broadcast) shape.
Shape common_shape(const TensorList& args);

// Runs `b` over `args` (and `capture` where it broadcasts to their common shape): the result has
// that shape (one element when b.reduce_out) and dtype b.dtype, and is never a view of an
// argument. `depth` 0 may nest a cond or a map whose bodies run at depth 1.
Tensor eval_body(const Body& b, const TensorList& args, const Tensor& capture, int depth = 0);

}  // namespace kiln::fuzz
