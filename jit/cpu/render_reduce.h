// Row kernels on the CPU target (loop_kernel.h "Row kernels", docs/jit.md "Reductions"): the
// function that walks rows, runs one pass over the row per Reduce expression in the eager
// kernels' order, then a pass for the element stores. The element expressions of each pass are
// emitted by the pointwise body emitter (body_emitter.h emit_body), so a row kernel's prologue and
// epilogue compute what a pointwise kernel computes, bit for bit.
//
// The function has the pointwise kernels' signature (render.h, KernelFn). n_inner is the row
// length; `params` holds the kernel's runtime parameters (8 bytes each), then one pointer per
// Reduce expression (in expression order) to its row program (jit/loop/row_program.h), made by
// the launcher for the row length, then the scratch pointer (row_stash below).
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

// The function of a row kernel (k.has_reduce()). Every operand's layout is Contiguous or
// Broadcast (the launcher runs nothing else through a row kernel).
// On either emitter (body_emitter.h).
void render_row_function(KernelCompiler& cc, const LoopKernel& k, const KernelVariant& v);
void render_row_function(RecordingAssembler& as, const LoopKernel& k, const KernelVariant& v);

}  // namespace kiln::jit
