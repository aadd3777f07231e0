// ElementwiseLoop: walks the common (broadcast) index space of an output and its inputs, with
// strides in bytes, merging dims that are contiguous for every operand, and calls an inner loop
// over the innermost dim. The range can be split for parallel execution.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "runtime/small_vector.h"
#include "runtime/tensor.h"

namespace kiln {

// Inner loop: ptrs[0] is the output, ptrs[1..] the inputs; strides in bytes; n elements.
// `params` are the op's numeric arguments (clamp bounds, fill value, exponent).
using InnerLoop = void (*)(char* const* ptrs, const int64_t* strides, int64_t n,
                           const Scalar* params);

class ElementwiseLoop {
 public:
  static constexpr int kMaxOperands = 4;

  // Operand 0 is `out`; the inputs are broadcast to out's shape. A null entry in `scalars`
  // stands for nothing; a non-null one replaces the input at that position by a single value
  // (stride 0 everywhere).
  ElementwiseLoop(const Tensor& out, std::span<const Tensor> inputs,
                  std::span<const void* const> scalars = {});

  int64_t numel() const { return numel_; }
  // Runs inner over the linear index range [begin, end) of the (coalesced) index space.
  void run_range(int64_t begin, int64_t end, InnerLoop inner, const Scalar* params) const;
  // Runs the whole space, in parallel when it is large.
  void run(InnerLoop inner, const Scalar* params) const;

 private:
  int nops_ = 0;
  int ndim_ = 0;
  int64_t numel_ = 1;
  DimVector sizes_;  // innermost last
  std::array<DimVector, kMaxOperands> strides_;
  std::array<char*, kMaxOperands> base_{};
};

}  // namespace kiln
