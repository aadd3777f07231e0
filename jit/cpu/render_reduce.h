// Row kernels on the CPU target (loop_kernel.h "Row kernels", docs/jit.md "Reductions"): the
// function that walks rows, runs one pass over the row per Reduce expression in the eager
// kernels' order, then a pass for the element stores. The element expressions of each pass are
// emitted by the pointwise body emitter (body_emitter.h emit_body), so a row kernel's prologue and
// epilogue compute what a pointwise kernel computes, bit for bit.
//
// The function has the pointwise kernels' signature (render.h, KernelFn). n_inner is the row
// length; `params` holds the kernel's runtime parameters (8 bytes each), then one pointer per
// Reduce expression (in expression order) to its row program (jit/loop/row_program.h), made by
// the launcher for the row length, then the scratch pointer (row_stash below; more rows where
// row_pipelined: row_scratch_words), 64-byte aligned.
#pragma once
#include <asmjit/x86.h>

#include <cstdint>
#include <vector>

#include "jit/cpu/body_emitter.h"
#include "jit/cpu/recording_assembler.h"
#include "jit/cpu/render.h"
#include "jit/cpu/vec_emitter.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

// The element values the last Reduce pass computes that the element pass needs again and that
// are costly to recompute (they read a transcendental: exp(x - m) in a softmax). The last pass
// stores them to a scratch row, the element pass loads them back: after the Reduce programs,
// `params` holds a pointer to (n + 64) * 8 bytes per stashed value (the row and room for a
// whole vector past its end), one scratch per thread.
std::vector<int32_t> row_stash(const LoopKernel& k);

// Whether the row function of `k` on `isa` is pipelined across rows, and along which pass
// (the index among its Reduces; -1: not pipelined): the element pass of row o rides along the
// first Reduce pass of row o + 1 (its bodies interleaved with the pass's, masked in its tails),
// so a softmax's division runs next to the next row's max, which reads that row from memory.
// Row o's row values are carried in registers of their own, the scratch rows (row_stash)
// alternate between two buffers, and a call's first row carries the element bodies of a row
// -1 whose outputs go to a dummy row per output, so the launcher allocates more scratch
// (row_scratch_words). AVX-512 (masked tails), kernels with a scratch row (compute-bound: their
// element values read a transcendental; layer norm got slower pipelined) and element outputs,
// no ReduceFirst, bodies that may be unrolled (cpu_kernel_unrolls). Results are the same bits:
// each element is computed by the same instructions, each Reduce in the same order.
int row_pipelined_pass(const LoopKernel& k, JitIsa isa);
bool row_pipelined(const LoopKernel& k, JitIsa isa);
// The 8-byte words of one thread's scratch for rows of `n`: n + 64 per stashed value, and where
// pipelined twice that plus n + 64 per output; 0 where the kernel has no scratch row.
size_t row_scratch_words(const LoopKernel& k, JitIsa isa, int64_t n);
// The same from row_stash(k).size(), row_pipelined(k, isa) and k.num_outputs() (found once).
size_t row_scratch_words(size_t stash_values, bool pipelined, int32_t outputs, int64_t n);
// Whether every piece of `program` (the row program of a pipelined kernel's carrying pass)
// starts a multiple of `lanes` elements into the row: the element bodies at the pass's full
// vectors are then vector-aligned wherever the row is, as non-temporal stores need (the
// launcher streams only then).
bool row_pieces_aligned(const std::vector<int64_t>& program, int64_t lanes);

// The function of a row kernel (k.has_reduce()). Every operand's layout is Contiguous or
// Broadcast (the launcher runs nothing else through a row kernel).
// On either emitter (body_emitter.h).
void render_row_function(KernelCompiler& cc, const LoopKernel& k, const KernelVariant& v);
void render_row_function(RecordingAssembler& as, const LoopKernel& k, const KernelVariant& v);

}  // namespace kiln::jit
