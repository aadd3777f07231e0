// Operands read as broadcasts: an elementwise reader broadcasts a smaller operand itself, so a
// value that only exists to be broadcast into it need not be written out in full.
//
// Fills: a fill (zeros_like, full) whose every reader is an elementwise op that gets its shape
// from its other operands becomes a fill of one element per dim (the same rank: [1, 1, ...]),
// which the readers broadcast. Backward rules write `where(mask, g, zeros_like(g))` (relu,
// cross_entropy, clamp, pow): the full-size zeros were an eager step writing a whole tensor that
// a kernel then read back; now constant folding makes the one element a constant of the plan.
// Not for a fill that is a graph output, has a promoted scalar, lies off the CPU, or has a reader
// that is a view, a reduction, a matmul or anything else that reads its layout, or that takes
// its shape from the fill (`where(c, x, zeros)` with c and x smaller than the result).
//
// Expands: an elementwise reader of `expand(u)` whose shape its operands give with u read in
// the expand's place reads u. Autograd writes the gradient of a reduction as
// `g.unsqueeze(d).expand(x's shape)`: the expand was a view step between the forward's row
// kernel and the backward's (logsumexp's, std's, a norm's), the expanded value a strided read;
// now the reader broadcasts u, a row value that the row kernel holds (planner.cpp). Not for an
// expand off the CPU, nor where u has no dims and the reader mixes dtypes (a 0-dim tensor
// counts less in type promotion than one with dims: the result dtype could change). The expand
// itself stays for its other readers (dce() drops it when none is left).
//
// Exact: an elementwise op reads the same value at every index either way; the rank of a fill,
// the dtypes and the readers' output metadata stay, so neither promotion nor broadcasting
// changes. Whether a reader's shape follows from its operands depends on which dims are 1, which
// the region key fixes: the rewritten graph stays size-generic.
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many fills were shrunk.
int broadcast_fills(PassGraph& pg);

// Returns how many reads of an expand now read its input.
int broadcast_expands(PassGraph& pg);

// An elementwise node P whose every operand is one expand, `P(expand(u))`, becomes
// `expand(P(u))`: P over fewer elements, and an expand whose readers may broadcast u' instead
// (broadcast_expands). Mean's gradient `g.expand(x's shape) / N` is such a node. Not for a P
// that is a graph output (the user's tensor would be a view), draws, or checks data (it would
// see u's elements where an empty expand had none). Returns how many nodes were lifted over;
// dce() drops the expands left unread.
int lift_expands(PassGraph& pg);

}  // namespace kiln::jit::passes
