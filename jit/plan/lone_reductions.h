// Sums and means of a leaf that nothing else reads stay eager steps (a planner rule,
// jit/plan/planner.cpp).
//
// Why: such a reduction fuses nothing. Its kernel would load the leaf and fold it, as eager's
// vectorized sum does at memory speed (ops/cpu/reduce_loops.h), plus the row kernel's per-row
// walk: `x.sum()`, `x.sum(-1)` over a [4096, 1024] leaf ran at 0.95x of eager in jit mode, a mean
// over rows of 32 elements (`x.reshape({4096, 32, 32}).mean(-1)`) at 0.83x (kiln-mode-survey,
// the 2-core Emerald Rapids VM, 2026-12-01). Other reductions of a leaf (amax, var, argmax,
// logsumexp) stay kernels: the JIT's are 1.5-1.8x faster than eager's there; so do column
// sums and means (`x.mean(0)` of a [16, 512, 512] leaf: 1.30x).
//
// Which: a Sum or Mean node of one floating input on the CPU, reducing innermost dims (a row
// kernel's reduction, jit/lower/lower_reduce.h), whose input is a graph input, or a
// chain of views of one (each view read by the next link only), that no other node reads, and
// the only reduction of the graph over an input of its sizes. A second reader (another
// reduction of the same leaf, an elementwise use) may share the kernel's one pass over it, and
// another reduction over the same index space may share the kernel (`x.sum(-1) + y.sum(-1)`):
// both keep the kernel.
#pragma once
#include <cstdint>
#include <vector>

#include "tracer/graph.h"

namespace kiln::jit::planning {

// Per node of g: 1 where it is such a reduction.
std::vector<uint8_t> lone_sums_of_leaves(const tracer::Graph& g,
                                         const std::vector<const tracer::ValueMeta*>& meta);

}  // namespace kiln::jit::planning
