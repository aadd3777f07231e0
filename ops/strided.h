// as_strided and as_strided_scatter: a view by explicit geometry, and its functional write.
// The recorder uses them to functionalize writes through views (docs/tracer.md); they are also
// public, as in PyTorch.
#pragma once
#include "runtime/attrs.h"
#include "runtime/tensor.h"

namespace kiln {

// Attrs of both ops: dims = sizes followed by strides (2 x rank), ints[0] = storage offset.
Attrs strided_attrs(const DimVector& sizes, const DimVector& strides, int64_t offset);

}  // namespace kiln
