// Column kernels on the CPU target (loop_kernel.h "Column kernels", docs/jit.md "Column
// reductions"): a kernel with Reduce expressions launched to reduce the rows of an
// [n rows, w columns] block, each vector lane a column, in eager's column order (the column
// program, jit/loop/row_program.h): per block of up to 4 vectors of columns, each piece of the
// program folds its rows into one accumulator per Reduce and vector (several independent
// accumulators: the vectors side by side), partial results combine on a stack, then the row
// values are computed and stored. Element stores are written in that pass, or, where one reads
// a reduction's result (an epilogue: `x - x.mean(0)`), in a second pass over the block's rows.
//
// The function has the pointwise kernels' signature (render.h, KernelFn), read as:
//   ptrs          each operand at (row 0, column 0) of the block;
//   inner_strides each operand's byte stride from one reduced row to the next (0: broadcast);
//   n_inner       the columns w; n_outer the reduced rows n;
//   params        the kernel's runtime parameters (8 bytes each), then a pointer to the
//                 column program of n.
// Along the columns every operand is Contiguous or Broadcast (KernelVariant::layout); the
// launcher (cpu_target.cpp) runs nothing else through a column kernel.
#pragma once
#include <asmjit/x86.h>

#include "jit/cpu/render.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

// The most partial results of a column program the function holds (program_depth; the
// launcher checks it: 2^40 rows need 37).
inline constexpr int kColStackDepth = 48;

// Whether `k` can be a column kernel: no Reduce's operand reads a reduction's result (one
// reducing pass), no ReduceFirst, and every row value it stores is a float.
bool column_kernel_ok(const LoopKernel& k);

// The function of a column kernel (k.has_reduce(), column_kernel_ok(k)).
void render_column_function(asmjit::x86::Compiler& cc, const LoopKernel& k, const KernelVariant& v);

}  // namespace kiln::jit
