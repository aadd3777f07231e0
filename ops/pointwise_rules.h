// The dtype rules of the pointwise ops, readable by lowering passes (jit/plan/lowering.cpp) as
// well as by the meta functions and eager kernels (ops/pointwise.cpp): how an op's compute dtype
// follows from its promoted input dtype, and its output dtype from the compute dtype. The eager
// kernels convert every input to the compute dtype first, compute there, and write the output
// dtype; a lowering that reproduces eager bits must do the same.
#pragma once
#include <cstdint>

#include "runtime/dtype.h"
#include "runtime/op_list.h"

namespace kiln {

enum class DTypeRule : uint8_t {
  Floating,  // ints and bool compute in Float32
  Numeric,   // same dtype; Bool is an error
  Any,       // same dtype, Bool included
  BoolOut,   // same dtype in, Bool out
  BoolIn,    // input converted to Bool, Bool out
};

DTypeRule unary_dtype_rule(OpId op);   // Neg ... Clamp (the unary pointwise ops)
DTypeRule binary_dtype_rule(OpId op);  // Add ... LogicalOr (the binary pointwise ops)

// The compute dtype of `op` under `rule` for the promoted input dtype `in`; raises a kiln::Error
// naming the op when the rule rejects it (`what`: "input" or "inputs", for the message).
DType pointwise_compute_dtype(OpId op, DTypeRule rule, DType in, const char* what);
// The output dtype for a compute dtype.
DType pointwise_out_dtype(DTypeRule rule, DType compute);

}  // namespace kiln
