// Decompositions of composite ops into primitive ops: one entry per composite op, registered next
// to the op's definition (ops/pointwise_decompositions.cpp for the pointwise family), read by the
// JIT's decomposition pass (jit/passes/decompose.h). An entry writes the op's primitive nodes
// through a DecompositionEmitter, which stands for the graph being rewritten (ops/ sits below
// tracer/ in the layering, so it never sees a tracer::Graph).
//
// Contract of an entry:
// - Its primitives, each run by its eager kernel, give the composite's eager bits (the composite's
//   vector math is written in the order of its op chain for this: ops/cpu/vecmath/), except the
//   sign and payload of a NaN, which the numerical contract leaves open (docs/numerics.md).
//   tests/test_jit_passes.cpp checks every entry this way over dense samples of both float dtypes.
// - Every node it emits is elementwise and has the composite's output shape; it states each
//   node's dtype.
// - It returns the value that replaces the composite's output, or kNoDecomposition where it does
//   not cover the call (a dtype, an exponent); it then must have emitted nothing.
#pragma once
#include <cstdint>
#include <span>

#include "runtime/attrs.h"
#include "runtime/op_list.h"

namespace kiln {

using DecompValue = int32_t;  // a value of the graph being rewritten
inline constexpr DecompValue kNoDecomposition = -1;

// The composite call being decomposed.
struct DecompositionCall {
  OpId op;
  const Attrs& attrs;
  std::span<const DecompValue> inputs;
  std::span<const DType> input_dtypes;
  DType out_dtype;
};

class DecompositionEmitter {
 public:
  virtual ~DecompositionEmitter() = default;
  // Appends op(inputs; attrs) with the composite's output shape and dtype `dtype`.
  virtual DecompValue emit(OpId op, const Attrs& attrs, std::span<const DecompValue> inputs,
                           DType dtype) = 0;

  // The calls the API makes (ops/pointwise.cpp), so emitted nodes are what recording the op
  // chain would have produced: same attrs, hence the same hashes and CSE keys.
  DecompValue unary(OpId op, DecompValue x, DType dtype);
  DecompValue binary(OpId op, DecompValue a, DecompValue b, DType dtype);
  DecompValue scalar_right(OpId op, DecompValue a, const Scalar& s, DType dtype);  // a op s
  DecompValue scalar_left(OpId op, const Scalar& s, DecompValue a, DType dtype);   // s op a
};

using DecompositionFn = DecompValue (*)(DecompositionEmitter& e, const DecompositionCall& call);

// Registers the decomposition of `op` (once, at init).
void register_decomposition(OpId op, DecompositionFn fn);
// The decomposition of `op`, or null when it has none.
DecompositionFn decomposition(OpId op);

}  // namespace kiln
