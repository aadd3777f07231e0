// Column kernels on the CPU target (loop_kernel.h "Column kernels", docs/jit.md "Column
// reductions"): a kernel with Reduce expressions launched to reduce the rows of an
// [n rows, w columns] block, each vector lane a column, in eager's column order (the column
// program, jit/loop/row_program.h). The program is walked once per call for all its columns:
// each piece (a run of at most 64 rows) starts a level of a per-thread scratch at the identity
// and walks its rows in memory order, each row across all the call's columns, every vector
// folded into its partial result in that level (L1: the loads of a row-major input stream); a
// combine merges the two latest levels column by column. Then, per block, the row
// values are computed and stored, and where an element store reads a reduction's result (an
// epilogue: `x - x.mean(0)`) the block's rows are walked once more to store the element values;
// without one, element stores are written by the reducing pass.
//
// The function has the pointwise kernels' signature (render.h, KernelFn), read as:
//   ptrs          each operand at (row 0, column 0) of the block;
//   inner_strides each operand's byte stride from one reduced row to the next (0: broadcast);
//   n_inner       the columns w; n_outer the rows the epilogue walks (all the reduced rows n
//                 in a call that reduces them all);
//   params        the kernel's runtime parameters (8 bytes each), then a pointer to the
//                 column program, then a pointer to the scratch: program_depth levels of
//                 Reduces x (w rounded up to 16) x 8 bytes, then the index of the call's first
//                 row among all the reduced rows (argmax's rows count from it), then n (RowSize).
// A call may reduce one chunk of the rows by its program, its level popped by word 4 into a
// slot that word 3 pushes in a later call (row_program.h), and walk no epilogue rows, or push
// the combined level and walk a chunk's epilogue rows: the launcher's split of the rows across
// threads (cpu_kernel_reduce.cpp).
// Along the columns every operand is Contiguous or Broadcast (KernelVariant::layout); the
// launcher (cpu_kernel_reduce.cpp) runs nothing else through a column kernel.
// KernelVariant::streaming: element outputs are large and every vector of them starts aligned
// (non-temporal stores, a fence at the end), as in pointwise and row kernels.
#pragma once
#include <asmjit/x86.h>

#include "jit/cpu/recording_assembler.h"
#include "jit/cpu/render.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

// Whether `k` can be a column kernel: no Reduce's operand reads a reduction's result (one
// reducing pass), no ReduceFirst, argmax / argmin (ReduceArgMax / ReduceArgMin) of Float64
// values only, and every row value it stores is a float, an Int64 sum or an argmax's row.
bool column_kernel_ok(const LoopKernel& k);

// Whether `k`'s column function walks the rows a second time, storing element values that read a
// reduction's result (`x - x.mean(0)`): its epilogue.
bool column_kernel_has_epilogue(const LoopKernel& k);

// The scratch rows of columns (8 bytes each) that one level of a column kernel's partial
// results takes: one per Reduce, two per argmax / argmin (the values and their rows). The
// launcher allocates program_depth times this many rows per thread.
int column_scratch_slots(const LoopKernel& k);

// The function of a column kernel (k.has_reduce(), column_kernel_ok(k)).
// On either emitter (body_emitter.h).
void render_column_function(KernelCompiler& cc, const LoopKernel& k, const KernelVariant& v);
void render_column_function(RecordingAssembler& as, const LoopKernel& k, const KernelVariant& v);

}  // namespace kiln::jit
