// One op call as the dispatcher hands it around (runtime/dispatcher.h): the op, its inputs and
// attributes, and what its meta function decided about the output.
#pragma once
#include <cstdint>
#include <span>

#include "runtime/attrs.h"
#include "runtime/op_list.h"
#include "runtime/tensor.h"

namespace kiln {

struct OpCall {
  OpId op;
  std::span<const Tensor> inputs;
  const Attrs& attrs;
};

// What the meta function decides about the output. For view ops it also gives the view's
// geometry (strides and offset in elements, absolute in input 0's storage).
struct OutputMeta {
  DimVector sizes;
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  DimVector strides;   // views only
  int64_t offset = 0;  // views only
};

}  // namespace kiln
