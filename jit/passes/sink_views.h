// Views turned into index maps: a view of a pointwise result is computed as the pointwise op
// over views of its inputs, so the view reads memory through its strides (the kernel's index
// map) instead of splitting the chain into two kernels and a buffer.
//
//   v = permute(sin(cast(x)))        becomes   v' = sin(cast(permute(x)))
//   v = slice(a * b, dim, s, e)      becomes   v' = slice(a) * slice(b)   (less work, too)
//
// Views sunk: permute (transpose), slice (narrow), select, squeeze and unsqueeze. Not sunk:
// expand (the op would run once per broadcast element), view/reshape (the inputs' layouts may not
// allow it) and as_strided.
//
// Exact: a pointwise op computes each element from the same-index elements of its inputs, so
// computing it at the view's indices gives the same bits. A sink happens only where nothing can
// tell the difference:
//   - the pointwise node P lowers to a kernel (else nothing is gained), is not random, checks no
//     data, has no runtime scalar and no reader but the view, and is not a graph output;
//   - the view V is not a graph output (the user's tensor keeps its view geometry) and every
//     reader of V is elementwise (kWritesAnyLayout, not a view): a reduction, matmul or view
//     reads the layout, and V' is row-major where V was strided, so their order could change.
// Inputs of P that broadcast are first unsqueezed to P's rank; the view is then applied with
// their size-1 dims kept (a slice or select of a broadcast dim reads its one element), so every
// new node depends on ranks and size-1 dims only, which the region key fixes: the rewritten
// graph stays size-generic.
#pragma once
#include "jit/passes/pass_graph.h"
#include "jit/target.h"

namespace kiln::jit::passes {

// One sweep over the graph; returns how many views were sunk. Run dce() between sweeps: a sunk
// pointwise node is left dead, and the new views of its inputs may sink further.
int sink_views(PassGraph& pg, const KernelTarget& target);

// Moves every view node right after the node that defines its input (views of graph inputs
// first): a view costs nothing to run, and the planner fuses a node into a kernel only when all
// its inputs exist before that kernel runs, so a view made late would split the chain it feeds.
// Only the order changes (a valid topological order, random nodes in their relative order).
// Returns how many nodes changed place (0: the order was already so).
int hoist_views(PassGraph& pg);

}  // namespace kiln::jit::passes
