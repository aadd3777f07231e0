// Lowering of graph nodes into loop-IR expressions: which nodes a kernel can compute, and the
// expressions that reproduce the eager kernel of each (ops/cpu/pointwise_functors.h) operation
// for operation, so a fused kernel gives the eager bits.
//
// A node lowers when it is a pointwise op on the CPU whose output and tensor inputs all have the
// kernel's floating dtype (then the op's compute dtype is that dtype too: ops/pointwise.cpp) and
// the target renders every expression it needs. Its scalars (a Scalar operand, clamp bounds, an
// exponent) are constants converted to the dtype as the eager kernel converts them, or kernel
// parameters where the region promoted them to runtime values.
#pragma once
#include <cstdint>
#include <span>

#include "jit/loop/loop_kernel.h"
#include "jit/target.h"
#include "tracer/graph.h"

namespace kiln::jit {

// Where a node's Attrs::scalars[i] comes from: a baked value (param < 0) or kernel param `param`.
struct ScalarSource {
  int32_t param[2] = {-1, -1};
};

// Whether `n` lowers into a kernel of `target`. `input_meta(k)` gives the metadata of input k.
bool lowers(const tracer::Node& n, std::span<const tracer::ValueMeta* const> inputs,
            const ScalarSource& scalars, const KernelTarget& target);

// Whether the comparison `c` (eq, ne, lt, le, gt, ge) can be computed inside a kernel of dtype `d`
// as a lane mask: its tensor inputs have dtype `d`. Its Bool result is then never stored; a
// where / masked_fill of the kernel consumes it (the planner inlines it into their kernel).
bool lowers_mask(const tracer::Node& c, std::span<const tracer::ValueMeta* const> inputs, DType d,
                 const KernelTarget& target);
// Whether a where / masked_fill whose condition lowers_mask() lowers into a kernel of its dtype.
bool lowers_select(const tracer::Node& n, std::span<const tracer::ValueMeta* const> inputs,
                   const KernelTarget& target);

// Appends the expressions of `n` to `k`; `in` holds the expression ids of its tensor inputs.
// Returns the expression id of its result. Only for nodes that lowers(), lowers_mask() or
// lowers_select() accepted (a where's or masked_fill's condition is the id of a mask).
int32_t lower_node(LoopKernel& k, const tracer::Node& n, std::span<const int32_t> in,
                   const ScalarSource& scalars);

}  // namespace kiln::jit
