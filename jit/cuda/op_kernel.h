// One eager op call as a single-op loop kernel: what the CUDA backend runs for pointwise ops,
// casts, copies and fills. Pointwise ops go through the CPU JIT's own lowering
// (jit/lower/lowering.h), so a CUDA kernel computes operation for operation what the eager CPU
// kernel does; the op's Scalar operands (a scalar side, clamp bounds, masked_fill's and full's
// value) become kernel params, so x * 0.5 and x * 0.25 share one compiled kernel. Pointwise ops
// computing in Bool (add, mul, maximum, compares of Bool tensors; where and masked_fill of Bool
// values), which the lowering leaves to eager, compute in Int32 here and convert back.
//
// Needs no GPU: CI builds, renders and compiles the kernel of every op and dtype (sm_90).
#pragma once
#include "jit/loop/loop_kernel.h"
#include "runtime/dispatcher.h"

namespace kiln::jit::cuda {

// The kernel writing `call`'s result, of dtype `out`, with every tensor on `device`. Output 0 is
// the result; input i is call.inputs[i]; param p is call.attrs.scalars[p]. Raises kiln::Error
// naming the op when it has no loop kernel (pow with a tensor or general exponent).
LoopKernel op_loop_kernel(const OpCall& call, DType out, Device device);

// Whether render.cpp can render `op` computing in `dtype` (a compare or Cast: its operand's).
bool cuda_renders(ExprOp op, DType dtype);

}  // namespace kiln::jit::cuda
