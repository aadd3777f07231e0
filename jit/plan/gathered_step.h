// Gathered row reductions run per block of rows (docs/jit.md "Reductions over other dim sets").
//
// A reduction over dims that are not the innermost ones (batch norm's statistics over {0, 2,
// 3}) is planned as a gather g = copy(permute(x)) (an eager copy step for a leaf x, a pointwise
// kernel computing x's producers at the gathered indices otherwise) followed by a row kernel
// reducing g's rows (jit/passes/gathered_rows.h). Run as two whole steps, g goes to memory and
// comes back: for [32, 64, 56, 56] Float32 that is 2 of batch norm's 5 passes over 25.7 MB.
// When g dies at the row kernel, the pair runs instead per block of g's leading dim: each
// thread gathers a block (a few hundred KiB) into a buffer of its own and reduces it while it
// is still in its cache; g itself is never written.
//
// Blocks: plan_row_blocks (ops/cpu/reduce_plan.h), the eager reductions' rule: ~256 KiB of g's
// leading dim a block, at least one block per thread, g of KILN_GATHER_BLOCK_MIN_KIB (4 MiB) or
// more (below it g stays in the caches between the two steps anyway), slabs up to 2 MiB.
//
// Contract: the same bits as the two steps run whole. The gather writes the same elements (the
// same copy or kernel, over a sub-range of its index space); the row kernel reduces whole rows
// in its fixed order wherever they lie, and its row values are the whole launch's (long rows
// split across threads keep their bits: docs/jit.md "Long rows across threads"). Whatever a
// run cannot block (a small g, one slab past the block size, a layout a kernel declines, an
// output sharing memory with what the gather reads, a failed launch) runs the two steps whole.
//
// The tail (Step::gathered_tail, a leaf's gather only): the pointwise kernels right after the
// row kernel (views between them allowed) that read the leaf at its gathered elements or make
// one value per leading index (batch norm's sqrt(var + eps) and its output) run per block too,
// over the block's range of g's leading dim, right after its row kernel, reading the leaf from
// the block's buffer: batch norm reads x once instead of twice. Each run takes the longest
// prefix that fits (JitPlan::prepare_gathered_tail, gathered_tail.h); the rest run as steps after
// the blocks. Same bits: the same kernels over sub-ranges of their index spaces.
#pragma once
#include <vector>

#include "jit/plan/jit_plan.h"
#include "tracer/graph.h"

namespace kiln::jit {

// Marks step s as a blocked gather (Step::gathered) where it produces one value g (an eager
// Copy, or a pointwise kernel with g its only output and no random draws), step s + 1 is a row
// kernel reading g, and g dies there (steps' release lists already computed); for a Copy, the
// steps after the row kernel that may join its blocks (Step::gathered_tail).
void mark_gathered_steps(const tracer::Graph& g, std::vector<Step>& steps);

}  // namespace kiln::jit
