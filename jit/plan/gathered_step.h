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
// Contract: the same bits as the two steps run whole. The gather writes the same elements (the
// same copy or kernel, over a sub-range of its index space); the row kernel reduces whole rows
// in its fixed order wherever they lie, and its row values are the whole launch's (long rows
// split across threads keep their bits: docs/jit.md "Long rows across threads"). Whatever a
// run cannot block (a small g, one slab past the block size, a layout a kernel declines, an
// output sharing memory with what the gather reads, a failed launch) runs the two steps whole.
#pragma once
#include <cstdint>
#include <vector>

#include "jit/plan/jit_plan.h"
#include "tracer/graph.h"

namespace kiln::jit {

// The bytes of g's leading-dim block that a thread gathers and reduces at once, and the largest
// slab (one index of the leading dim) worth blocking. The smallest g blocked is
// config().gather_block_min_kib (KILN_GATHER_BLOCK_MIN_KIB, default 4 MiB: below it g stays in
// the caches between the two steps anyway).
inline constexpr int64_t kGatherBlockBytes = int64_t{256} << 10;
inline constexpr int64_t kGatherBlockMaxSlabBytes = int64_t{2} << 20;

// Marks step s as a blocked gather (Step::gathered) where it produces one value g (an eager
// Copy, or a pointwise kernel with g its only output and no random draws), step s + 1 is a row
// kernel reading g, and g dies there (steps' release lists already computed).
void mark_gathered_steps(const tracer::Graph& g, std::vector<Step>& steps);

}  // namespace kiln::jit
