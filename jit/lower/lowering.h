// Lowering of graph nodes into loop-IR expressions: which nodes a kernel can compute, and the
// expressions that reproduce the eager kernel of each (ops/pointwise.cpp with the functors of
// ops/cpu/pointwise_functors.h) operation for operation, so a fused kernel gives the eager bits.
//
// As eager does, a node converts each tensor input to the op's compute dtype (its dtype rule,
// ops/pointwise_rules.h, over the promoted input dtypes: a Cast expression where they differ),
// computes there, and yields its output dtype (Bool for comparisons, stored as bytes 0 / 1). Its
// scalars (a Scalar operand, clamp bounds, an exponent, masked_fill's value) are constants
// converted to the compute dtype as the eager kernel converts them (Scalar::to), or kernel
// parameters of that type where the region promoted them to runtime values. An op whose compute
// dtype is Bool (Bool + Bool, a compare of Bools, where / masked_fill giving a Bool) computes in
// Int32 and casts back, which is what eager's bool(int(a) op int(b)) is: targets need no Bool
// arithmetic (lowering.cpp, computes_via_int).
#pragma once
#include <cstdint>
#include <span>

#include "jit/loop/loop_kernel.h"
#include "jit/target.h"
#include "tracer/graph.h"

namespace kiln::jit {

// Where a node's Attrs::scalars[i] comes from: a baked value (param < 0) or kernel param `param`
// (the lowering sets the param's type in LoopKernel::params). A random node's Philox words
// (seed and counter, changing every run) are the four Int32 params from `philox` on.
struct ScalarSource {
  int32_t param[2] = {-1, -1};
  int32_t philox = -1;
};

// The expression op of a binary pointwise op (arithmetic, maximum/minimum, compares, logical
// and/or), or ExprOp::kCount.
ExprOp binary_expr(OpId op);

// Whether `n` lowers into a kernel of `target`, which runs on `device` (the node and its inputs
// must all be there). `inputs[k]` is the metadata of input k.
bool lowers(const tracer::Node& n, std::span<const tracer::ValueMeta* const> inputs,
            const ScalarSource& scalars, const KernelTarget& target, Device device = Device::cpu());

// Appends the expressions of `n` (one that lowers()) to `k`; `in` holds the expression ids of
// its tensor inputs (their types are the inputs' dtypes), `inputs` their metadata. Returns the id
// of its result, whose type is the node's output dtype.
int32_t lower_node(LoopKernel& k, const tracer::Node& n,
                   std::span<const tracer::ValueMeta* const> inputs, std::span<const int32_t> in,
                   const ScalarSource& scalars);

}  // namespace kiln::jit
