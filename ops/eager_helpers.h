// Helpers for eager kernels that need their inputs in a simple layout. An eager kernel runs on
// materialized inputs and must not dispatch ops itself: a recording mode may be installed on the
// thread (the tracer interprets graphs with eager kernels), and a nested dispatch would be
// recorded instead of run. These helpers call the Copy/Cast kernel directly instead.
#pragma once
#include "runtime/tensor.h"

namespace kiln {

// A row-major tensor of `dtype` with t's values: t itself when it already is one, else a copy.
Tensor eager_contiguous(const Tensor& t, DType dtype);
inline Tensor eager_contiguous(const Tensor& t) { return eager_contiguous(t, t.impl()->dtype()); }

}  // namespace kiln
