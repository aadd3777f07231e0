// Fills read as broadcast operands: a fill (zeros_like, full) whose every reader is an
// elementwise op that gets its shape from its other operands becomes a fill of one element per
// dim (the same rank: [1, 1, ...]), which the readers broadcast. Backward rules write
// `where(mask, g, zeros_like(g))` (relu, cross_entropy, clamp, pow): the full-size zeros were
// an eager step writing a whole tensor that a kernel then read back; now constant folding makes
// the one element a constant of the plan.
//
// Exact: an elementwise op reads the same value at every index either way; the rank, dtype and
// the readers' output metadata stay, so neither promotion nor broadcasting changes.
// Not for a fill that is a graph output, has a promoted scalar, lies off the CPU, or has a reader
// that is a view, a reduction, a matmul or anything else that reads its layout, or that takes
// its shape from the fill (`where(c, x, zeros)` with c and x smaller than the result).
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many fills were shrunk.
int broadcast_fills(PassGraph& pg);

}  // namespace kiln::jit::passes
