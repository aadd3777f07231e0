// The combining order of a row kernel's Reduce expressions (loop_kernel.h, "Row kernels") as a
// program for one row length: what every kernel target follows, so the JIT gives the eager
// reductions' bits (ops/cpu/reduce_loops.h: lanes8, pairwise_sum, range_extreme, run_rows and
// tree_combine). The program lists the row's pieces and combines in postfix order, in words:
//   1 len vec   a piece of `len` elements (in row order): its first `vec` in reduce_lanes(op)
//               lanes (lane k takes elements k, k + lanes, ...), folded as eager folds them (a
//               tree for sums and products, in order for max / min), then the rest in order;
//   2           combine the two latest results (earlier on the left);
//   0           end (the one result left is the row's).
// An empty row is one piece of no elements: the op's identity. Columns have a program too.
#pragma once
#include <cstdint>
#include <vector>

#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

// The length of the chunks a long row is cut into (eager's kRowChunk, ops/cpu/reduce_loops.h):
// their results combine in a fixed tree, so a row's result never depends on the thread count.
inline constexpr int64_t kRowProgramChunk = 65536;
// The rows a column is cut into likewise (eager's kColRows): chunks eager reduces across threads.
inline constexpr int64_t kColRowChunk = 2048;

// The accumulator lanes of Reduce `op` over `type`: 8 for sums and products (eager's lanes8);
// for max / min eager's two SSE2 registers: 8 Float32 or 4 Float64 lanes.
int reduce_lanes(ExprOp op, DType type);

// The row program of Reduce `op` over `n` elements of `type`.
std::vector<int64_t> row_program(ExprOp op, DType type, int64_t n);

// The column program over `n` reduced rows (loop_kernel.h "Column kernels"; eager's run_cols
// and col_block): the same words, every piece `1 len 0` (its rows folded in order from the
// identity). It is the same for every op and type.
std::vector<int64_t> column_program(int64_t n);

// The most partial results a program holds at once (the stack its renderer needs).
int64_t program_depth(const std::vector<int64_t>& p);

}  // namespace kiln::jit
