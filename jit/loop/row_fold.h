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

// Column kernels (loop_kernel.h "Column kernels", row_program.h column_program): each piece of
// a column program folds its `len` rows in order from the op's identity, column by column; two
// levels combine column by column, the earlier on the left. `values`: `len` rows of `w` values
// of `type`, row-major; a level: `w` results of the Reduce's type. ReduceSum, ReduceProd,
// ReduceMax, ReduceMin of Float32 or Float64, and ReduceSum of Int64 (wrapping: exact in any
// order).
void fold_column_piece(ExprOp op, DType type, const void* values, int64_t len, int64_t w,
                       void* level);
void combine_column_levels(ExprOp op, DType type, void* earlier, const void* later, int64_t w);
// ReduceArgMax / ReduceArgMin over Float64 values: a level holds per column the extreme value
// (w doubles) and then its row (w Int64s); the first extreme wins, a NaN being the extreme and
// the first NaN winning (eager's `better`). `first_row`: the row index of the piece's row 0.
void fold_column_piece_arg(ExprOp op, const double* values, int64_t len, int64_t w,
                           int64_t first_row, void* level);
void combine_column_levels_arg(ExprOp op, void* earlier, const void* later, int64_t w);

// ReduceFirst over `n` flags of float `type`: the index of the first nonzero one (NaN counts),
// else n.
int64_t first_nonzero(DType type, const void* flags, int64_t n);

}  // namespace kiln::jit
