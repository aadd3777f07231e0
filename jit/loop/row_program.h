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
// A long row's whole chunks all have the same pieces: each is a call of one shared program
// (full_chunk_program), so a row's program has a few words per chunk (built per launch: the
// pieces of 2^23 elements took 5 ms to write out):
//   5 addr      run the program at `addr` (pieces and combines ending in 0, no calls), then go on.
// Two more words let the CPU launcher split a long row across threads (cpu_kernel_reduce.cpp):
//   3 addr      push the partial result stored at address `addr` (one value of the Reduce's type
//               in an 8-byte slot);
//   4 addr      pop the latest result into the slot at `addr`.
// Calls of the kernel over a row's chunks each store their chunks' results
// (row_program_chunks), and a last call combines them (row_program_partials) in the tree
// row_program follows: each chunk is reduced by the same piece, and the results meet in the same
// order, so the bits are row_program's, whatever the threads.
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

// The chunks of a row of n elements (at least 1): results row_program combines in its tree.
int64_t row_chunks(int64_t n);

// The pieces of chunks [c0, c1) of a row of `n` elements, each chunk's result popped into
// slots[c - c0]: a call over the row from chunk c0's first element (its elements only are read).
std::vector<int64_t> row_program_chunks(ExprOp op, DType type, int64_t n, int64_t c0, int64_t c1,
                                        uint64_t* slots);
// row_program's tree over the row's chunk results, pushed from slots[0, row_chunks(n)): reads no
// element.
std::vector<int64_t> row_program_partials(int64_t n, const uint64_t* slots);

// The column program over `n` reduced rows (loop_kernel.h "Column kernels"; eager's run_cols
// and col_block): the same words, every piece `1 len 0` (its rows folded in order from the
// identity). It is the same for every op and type.
std::vector<int64_t> column_program(int64_t n);

// A column's counterparts of row_program_chunks / row_program_partials (the CPU launcher splits
// the rows of a column kernel's calls across threads by chunks of kColRowChunk rows): a partial
// result is a whole level of the column kernel's scratch (every Reduce's row of columns), and
// 3 / 4 copy `slot_bytes` from / to the slot's address (render_cols.h). The chunks [c0, c1) of
// n rows from chunk c0's first row, each popped into slots + (c - c0) * slot_bytes; then the
// column program's tree over slots + c * slot_bytes, c < the chunks of n.
std::vector<int64_t> column_program_chunks(int64_t n, int64_t c0, int64_t c1, char* slots,
                                           int64_t slot_bytes);
std::vector<int64_t> column_program_partials(int64_t n, const char* slots, int64_t slot_bytes,
                                             char* keep = nullptr);
// The program of a call that reduces no row: the level stored at `level` pushed (an epilogue's
// chunk of rows after column_program_partials kept the combined level there).
std::vector<int64_t> column_program_pushing(const char* level);

// The most partial results a program holds at once (the stack its renderer needs).
int64_t program_depth(const std::vector<int64_t>& p);

// Each piece of a program in row order, the calls' included: f(len, vec).
template <class F>
void for_each_piece(const int64_t* p, const F& f) {
  for (size_t i = 0; p[i] != 0;) {
    switch (p[i]) {
      case 1:
        f(p[i + 1], p[i + 2]);
        i += 3;
        break;
      case 5:
        for_each_piece(reinterpret_cast<const int64_t*>(static_cast<uintptr_t>(p[i + 1])), f);
        i += 2;
        break;
      case 2:
        i += 1;
        break;
      default:  // 3, 4: a partial result
        i += 2;
    }
  }
}

}  // namespace kiln::jit
