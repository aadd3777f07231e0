// Lowering of reduction nodes into row kernels (loop_kernel.h "Row kernels"): which reductions a
// kernel computes, and their expressions, in the eager kernels' order (ops/cpu/reduce_kernels.cpp)
// so that a fused reduction gives the eager bits.
//
// A reduction lowers when it reduces the innermost dims of its input (a suffix of the dims, at
// least one: `x.sum(-1)`, `x.mean({-2, -1})`), of Float32 or Float64, on the CPU:
//   sum -> ReduceSum(x)              amax -> ReduceMax(x)        amin -> ReduceMin(x)
//          (an Int32, Int64 or Bool input, in rows and columns: ReduceSum(Int64(x)), wrapping
//          as eager's uint64 sum: exact in any order)
//   prod -> ReduceProd(x)            mean -> ReduceSum(x) / RowSize
//   var -> the eager two passes: m = ReduceSum(x) / RowSize; ReduceSum((x - m) * (x - m)) /
//          RowSize(-unbiased), NaN for an empty row (eager returns NaN there whatever the
//          divisor).
//   logsumexp -> eager's logsumexp_rows: m = ReduceMax(x); shift = |m| == inf ? 0 : m;
//          log(ReduceSum(exp(x - shift))) + shift (an Int32 / Int64 input cast to Float32 first:
//          its max is exact in any order, so the float order gives eager's bits).
//   argmax / argmin (Float32, Float64; Int32 compared as Float64) -> the first index of the
//          extreme, NaN the extreme as in eager: m = ReduceMax(x) (ReduceMin);
//          ReduceFirst(x == m or (m and x are NaN)): an Int64 row value.
//   all / any (every dtype; over every dim) -> ReduceMin / ReduceMax of (x != 0 ? 1 : 0) > 0.5
//          (a Bool row value; NaN is nonzero; all of nothing is true, any of nothing false).
//   softmax over the last dim (Float32, Float64) -> eager's softmax_rows (ops/reduce.h):
//          e = exp(x - ReduceMax(x)); e * (1 / ReduceSum(e)): an element value, not a row value
//          (its node has the input's shape; lower_reduction returns it all the same).
//   log_softmax over the last dim (Float32, Float64) -> the same rows' log form:
//          x - (ReduceMax(x) + log(ReduceSum(exp(x - ReduceMax(x))))): an element value.
// A reduction of a block of dims followed by kept dims (`x.sum(0)` of [N, C], `x.mean({0, 1})`
// of [N, H, C]) lowers the same way into a column kernel (loop_kernel.h "Column kernels"): sum,
// mean, prod, amax, amin (var and logsumexp are split into two column reductions first:
// jit/passes/column_split.h; all/any are not), and argmax/argmin in one pass:
//   argmax / argmin over columns -> ReduceArgMax(Float64(x)) (ReduceArgMin): the value cast to
//          Float64 (exact; the running row index then has the value's 64-bit lanes).
// The rest (other dim sets) stays eager steps. mean's correction (attrs.ints[1], set by that
// split): ReduceSum(x) / RowSize(-correction), NaN for an empty row.
#pragma once
#include <cstdint>

#include "jit/loop/loop_kernel.h"
#include "tracer/graph.h"

namespace kiln::jit {

// The number of innermost dims `n` reduces if it lowers into a row kernel, else 0.
int row_reduction_dims(const tracer::Node& n, const tracer::ValueMeta& input);

// The dims `n` reduces if it lowers into a column kernel: `reduced` dims right before the last
// `inner` (both 0 where it does not).
struct ColumnDims {
  int reduced = 0, inner = 0;
};
ColumnDims column_reduction_dims(const tracer::Node& n, const tracer::ValueMeta& input);

// Whether a value is row-major (computed so, or dense in that order, size-1 dims aside): eager
// reduces such a value over leading dims in the column order, others as gathered rows
// (ops/cpu/reduce_plan.cpp), so only such a value may be a column kernel's reduced input.
bool reduces_in_column_order(const tracer::ValueMeta& m);
// Whether m's last k dims are one dense row-major run (size-1 dims aside; all dims when k is the
// rank or more): a row over them moves as one contiguous run.
bool trailing_dims_dense(const tracer::ValueMeta& m, size_t k);

// Appends the expressions of reduction `n` over the element value `x`; returns its row value
// (softmax: its element value). `columns`: the kernel is a column kernel (argmax / argmin lower
// to their one-pass Reduces there).
int32_t lower_reduction(LoopKernel& k, const tracer::Node& n, int32_t x, bool columns = false);

}  // namespace kiln::jit
