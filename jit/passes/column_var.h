// var over columns split into two column reductions, so that the CPU JIT fuses it: var(x, dims)
// of a block of leading dims with kept dims after it (`x.var(0)` of [N, C], batch-norm
// statistics over {0, 1} of [N, H, C]) is one node that no column kernel computes (a column
// kernel makes one reducing pass, docs/jit.md "Column reductions"), so it ran as an eager step.
// Rewritten as
//
//   m = mean(x, dims, keepdim = true)
//   v = mean((x - m) * (x - m), dims, keepdim, correction = unbiased)
//
// (Mean's correction, attrs.ints[1]: sum / (n - correction), NaN over no elements; ops/reduce.cpp)
// the planner makes two column kernels: the column means, then the centered squares' sums with
// x - m computed in the second kernel's prologue. Both read x (eager's var reads it twice too),
// and a prologue that computes x is fused into both; `std` = sqrt(v) and an epilogue that
// divides by it join the second kernel, and a user's own `x.mean(dims, true)` merges with m.
//
// Exact: eager's var over columns (ops/cpu/reduce_kernels.cpp var_rows, the Cols plan) is the
// column sums / n, then the sums of `(x - mean) * (x - mean)` in the same column order divided
// by n - unbiased, NaN for no rows; the two means are those sums and divisions, in that order.
// The planner keeps the products out of the first kernel's epilogue (they feed only the second
// reduction: planner.cpp), else they would be stored and read back.
//
// Only where the CPU target would launch both kernels at the recorded sizes
// (KernelTarget::launches_column_reduction: 16 columns or more, and no wider split in eager)
// and x is row-major (eager reduces other layouts as gathered rows, another order). Plans are
// size-generic: a later run whose sizes the kernels decline runs the four nodes eagerly, which
// still gives eager var's bits, more slowly.
#pragma once
#include "jit/passes/pass_graph.h"
#include "jit/target.h"

namespace kiln::jit::passes {

// Returns how many var nodes were split.
int split_column_var(PassGraph& pg, const KernelTarget& target);

}  // namespace kiln::jit::passes
