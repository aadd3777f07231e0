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

// Whether expression `id` of `k`, an exp's operand, may be far below exp's range: it reads a
// masking constant (-inf, or a constant so negative that exp underflows far below it: < -87 for
// Float32, < -708 for Float64, the -1e4, -1e9 and finfo.min masks of attention code) through
// selects, sums, differences and products (`where(mask, -inf, s) - max`), or it is shifted by a
// row's max (`x - amax(x)`: softmax, log_softmax, logsumexp, whose scores may hold a mask loaded
// from memory, `softmax(s + mask)`; eager's softmax-family kernels always take exp<true> too).
// Its exp then takes vecmath::exp<true>, which zeroes the lanes below exp's range instead of
// underflowing (a microcode assist per vector on Intel cores); the bits are the same.
bool exp_input_may_be_masked(const LoopKernel& k, int32_t id);

// `masked`: the operand may be far below exp's range (exp_input_may_be_masked): exp zeroes those
// lanes instead of underflowing.
template <class O>
typename O::F emit_math(const O& o, ExprOp op, typename O::F x, bool masked = false) {
  switch (op) {
    case ExprOp::Exp:
      return masked ? vecmath::exp<true>(o, x) : vecmath::exp(o, x);
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
