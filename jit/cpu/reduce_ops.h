// The eager reductions' combiners as vector code (ops/cpu/reduce_loops.h SumOp .. MinOp), shared
// by the CPU target's row (row_passes.cpp) and column (render_cols.cpp) renderers: the
// identity of each Reduce op, and combine(a, b) = a + b, a * b, or max_nan / min_nan (a when a
// wins or is NaN, else b: the later of two equal values, which decides between +0 and -0).
#pragma once
#include <limits>

#include "jit/cpu/vec_emitter.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

// `integer`: the Reduce's type is an integer one (Int64 sums and products of integers and
// Bools, in the double emitter's registers), whose 1 is the integer's bits, not 1.0's.
template <class T, class E>
asmjit::x86::Vec reduce_identity(AsmVecOps<T, E>& o, ExprOp op, bool integer = false) {
  switch (op) {
    case ExprOp::ReduceSum:
      return o.splat(0.0);
    case ExprOp::ReduceProd:
      return integer ? o.isplat(1) : o.splat(1.0);
    case ExprOp::ReduceMax:
      return o.splat(-std::numeric_limits<double>::infinity());
    default:
      return o.splat(std::numeric_limits<double>::infinity());
  }
}

// `integer`: the Reduce's type is an integer one (Int64 sums and products: wrapping integer adds
// and multiplies on the double emitter's registers, exact in any order).
template <class T, class E>
asmjit::x86::Vec reduce_combine(AsmVecOps<T, E>& o, ExprOp op, asmjit::x86::Vec a,
                                asmjit::x86::Vec b, bool integer = false) {
  switch (op) {
    case ExprOp::ReduceSum:
      return integer ? o.iadd(a, b) : o.add(a, b);
    case ExprOp::ReduceProd:
      return integer ? o.imul(a, b) : o.mul(a, b);
    case ExprOp::ReduceMax:
      return o.select(o.mask_or(o.gt(a, b), o.unord(a, a)), a, b);
    default:
      return o.select(o.mask_or(o.lt(a, b), o.unord(a, a)), a, b);
  }
}

// a = reduce_combine(o, op, a, b, integer), written into a by one instruction where one does it
// (sums, floating products: the same instruction and operand order), else through `move(a, r)`.
template <class T, class E, class Move>
void reduce_combine_into(AsmVecOps<T, E>& o, ExprOp op, asmjit::x86::Vec a, asmjit::x86::Vec b,
                         bool integer, Move move) {
  if (op == ExprOp::ReduceSum) return integer ? o.iadd_to(a, b) : o.add_to(a, b);
  if (op == ExprOp::ReduceProd && !integer) return o.mul_to(a, b);
  move(a, reduce_combine(o, op, a, b, integer));
}

}  // namespace kiln::jit
