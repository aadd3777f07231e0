// Op kernels: the baseline tier's building blocks (baseline_kernel.h). An op kernel is the
// machine code of ONE expression of a pointwise kernel, its operands loaded from memory and its
// result stored, rendered by the ordinary renderer (render.h) once per process and kept outside
// the kernel cache and every counter of renders (they are the tier's infrastructure, like the
// warm-up's samples). Copy kernels move one dtype between the layouts a baseline kernel meets: a
// broadcast or strided input into a contiguous tile, a tile out to a strided output.
//
// An op kernel computes its expression with the instructions the expression gets inside any
// fused kernel, so a chain of op kernels gives the fused kernel's bits (no contraction or
// reassociation across expressions: loop_kernel.h). The one rendering that depends on more than
// an expression's op and types is a Pow whose exponent is a Const (pow_scalar's path): its op
// kernel holds the constant (op_kernel_source).
//
// Lookups never render (find_op_kernel, a hash and a short lock): a baseline kernel that finds one
// missing is not made, and render_op_kernels_in_background() renders the missing ones for the
// kernels after it. The renderer's warm-up renders the common ones (render_common_op_kernels).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/render.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

// The op kernel of expression `e` of `k` (an operation, not a leaf): one input per operand in the
// operand's value type (a Bool mask as bytes), the expression over their loads, one store; a
// Pow's Const exponent stays a Const.
LoopKernel op_kernel_source(const LoopKernel& k, int32_t e);
// `out = in0` of one dtype.
LoopKernel copy_kernel_source(DType t);

// One op kernel's rendering: its source and every operand's inner layout (outputs first).
struct OpKernelRequest {
  LoopKernel source;
  std::vector<InnerLayout> layout;
};

// The op kernel's code on `isa`, or null when it has not been rendered (never renders).
KernelFn find_op_kernel(const LoopKernel& source, std::span<const InnerLayout> layout, JitIsa isa);

// Renders those of `requests` not rendered yet, now, on this thread; a render that fails is
// logged (KILN_LOG=jit=debug) and left unrendered. Returns how many it rendered.
int render_op_kernels(const std::vector<OpKernelRequest>& requests, JitIsa isa);
// The same on the planning thread (tracer::run_in_background), each request queued once.
void render_op_kernels_in_background(std::vector<OpKernelRequest> requests, JitIsa isa);

// The op and copy kernels most programs' pointwise chains are made of (Float32 arithmetic,
// compares, select and the vector math; copies of every dtype): what the warm-up renders.
std::vector<OpKernelRequest> common_op_kernels();

// How many op kernels the process has rendered (tests).
size_t op_kernel_count();

}  // namespace kiln::jit
