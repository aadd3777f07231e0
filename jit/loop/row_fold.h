// A row program (row_program.h) evaluated one value at a time: the result a row kernel's Reduce
// pass gives for a row of element values already computed, in the same combining order, so the
// same bits (the baseline tier's row kernels, jit/cpu/baseline_row_kernel.h, fold their rows
// with it). Target-independent plain C++: IEEE adds and multiplies of the value type (no
// contraction: a fold has no multiply-add), and the eager kernels' max / min semantics
// (ops/cpu/reduce_loops.h range_extreme and max_nan: a lane keeps the later of equal values, a
// piece whose lanes met a NaN is the default quiet NaN, the rest fold NaN-first in order).
#pragma once
#include <cstdint>

#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

// Reduce `op` (ReduceSum, ReduceProd, ReduceMax, ReduceMin) of `type` (Float32 or Float64) over
// the values the program's pieces walk from `values` on (contiguous, in `type`), combined in the
// program's order; every word of row_program.h (a call, a partial result pushed or popped)
// included. Returns the result's bits in the low bytes.
uint64_t fold_row(ExprOp op, DType type, const int64_t* program, const void* values);

// ReduceFirst over `n` flags of float `type`: the index of the first nonzero one (NaN counts),
// else n.
int64_t first_nonzero(DType type, const void* flags, int64_t n);

}  // namespace kiln::jit
