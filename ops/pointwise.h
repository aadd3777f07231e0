// Internal helpers to call pointwise ops through the dispatcher (used by the API wrappers and by
// composite ops in other families).
#pragma once
#include "runtime/dispatcher.h"

namespace kiln {

// Attrs.ints[0] of a binary op: where the Scalar operand (attrs.scalars[0]) stands.
enum ScalarSide : int64_t { kNoScalar = 0, kScalarRight = 1, kScalarLeft = 2 };
inline ScalarSide scalar_side(const Attrs& a) { return static_cast<ScalarSide>(a.ints[0]); }

Tensor unary_op(OpId id, const Tensor& x);
Tensor unary_op(OpId id, const Tensor& x, const Scalar& p0, const Scalar& p1 = 0);
Tensor binary_op(OpId id, const Tensor& a, const Tensor& b);
Tensor binary_op(OpId id, const Tensor& a, const Scalar& b, ScalarSide side = kScalarRight);
void binary_op_(OpId id, Tensor& self, const Tensor& b);
void binary_op_(OpId id, Tensor& self, const Scalar& b);
void unary_op_(OpId id, Tensor& self, const Scalar& p0 = 0, const Scalar& p1 = 0);

}  // namespace kiln
