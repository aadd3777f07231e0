// What cross_entropy's backward rule (ops/nn_backward.cpp) and the JIT's rewrite of the op
// (jit/passes/cross_entropy_split.h) share with ops/losses.cpp.
#pragma once
#include <cstdint>
#include <limits>

#include "runtime/dtype.h"

namespace kiln {

// The dtype in which the class indices 0..C-1 are compared with the targets: Int32 for Float32
// logits where the classes fit (a counted target is a class, so casting the targets is exact
// there; an ignored row is masked whatever it matches), else Int64. An Int64 operand would
// halve the lanes of a Float32 row kernel.
inline DType class_index_dtype(DType logits, int64_t classes) {
  return logits == DType::Float32 && classes <= std::numeric_limits<int32_t>::max() ? DType::Int32
                                                                                    : DType::Int64;
}

}  // namespace kiln
