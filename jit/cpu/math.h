// The transcendental expression ops of the CPU target, written with the shared vector math
// (ops/cpu/vecmath/): the same algorithm templates the eager kernels instantiate with GCC
// vectors, here instantiated with the asmjit emitter (vec_emitter.h), so both give the same bits.
#pragma once
#include "jit/loop/loop_kernel.h"
#include "ops/cpu/vecmath/vecmath.h"
#include "runtime/error.h"

namespace kiln::jit {

// Whether emit_math renders `op` (the target's supports() asks).
bool cpu_math_supported(ExprOp op);

// Whether expression `id` of `k` can be -inf by construction: a -inf constant reached through
// selects, sums, differences and products (a softmax's masked scores, `where(mask, -inf, s) -
// max`). Its exp then takes vecmath::exp<true>, which zeroes those lanes instead of underflowing
// (a microcode assist per vector on Intel cores); the bits are the same.
bool reads_minus_inf(const LoopKernel& k, int32_t id);

// `minus_inf`: the operand may be -inf (reads_minus_inf): exp zeroes the lanes below its range.
template <class O>
typename O::F emit_math(const O& o, ExprOp op, typename O::F x, bool minus_inf = false) {
  switch (op) {
    case ExprOp::Exp:
      return minus_inf ? vecmath::exp<true>(o, x) : vecmath::exp(o, x);
    case ExprOp::Log:
      return vecmath::log(o, x);
    case ExprOp::Log1p:
      return vecmath::log1p(o, x);
    case ExprOp::Expm1:
      return vecmath::expm1(o, x);
    case ExprOp::Tanh:
      return vecmath::tanh(o, x);
    case ExprOp::Sigmoid:
      return vecmath::sigmoid(o, x);
    case ExprOp::Silu:
      return vecmath::silu(o, x);
    case ExprOp::Erf:
      return vecmath::erf(o, x);
    case ExprOp::Sin:
      return vecmath::sin(o, x);
    case ExprOp::Cos:
      return vecmath::cos(o, x);
    case ExprOp::Gelu:
      return vecmath::gelu(o, x);
    case ExprOp::GeluTanh:
      return vecmath::gelu_tanh(o, x);
    default:
      fail("cpu kernel: {} has no vector-math rendering", expr_op_name(op));
  }
}

}  // namespace kiln::jit
