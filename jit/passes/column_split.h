// Two-pass reductions over columns split into column reductions, so that the CPU JIT fuses them.
// A column kernel makes one reducing pass (docs/jit.md "Column reductions"), so var and
// logsumexp over a block of leading dims with kept dims after it (`x.var(0)` of [N, C],
// batch-norm statistics over {0, 1} of [N, H, C], `x.logsumexp(0)`) were single nodes that no
// kernel computed: eager steps. Rewritten:
//
//   var:        m = mean(x, dims, keepdim = true)
//               v = mean((x - m) * (x - m), dims, keepdim, correction = unbiased)
//   logsumexp:  m = amax(x, dims, keepdim = true, empty = -inf)
//               s = clamp(m, lowest, max)        (the dtype's finite range)
//               l = log(sum(exp(x - s), dims, keepdim = true)) + s   (squeezed unless keepdim)
//   softmax over a dim that is not the last (softmax(x, 0) of [N, C], over channels of
//   [N, C, H, W]), log_softmax likewise:
//               m = amax(x, dim, keepdim = true, empty = -inf)
//               e = exp(x - m);  s = sum(e, dim, keepdim = true)
//               softmax: e * reciprocal(s)      log_softmax: x - (m + log(s))
//
// The planner makes two column kernels of each: the first reduction, then the second with its
// prologue (x - m, exp(x - s)) computed from x in the kernel; the epilogues (std's sqrt, log and
// + s) join the second. Both read x, as eager does; a prologue that computes x is fused into both.
// The planner keeps values that only the second reduction reads out of the first kernel's
// epilogue (planner.cpp), else they would be stored and read back.
//
// Exact (eager's bits), from ops/cpu/reduce_kernels.cpp's Cols plan:
// - var_rows: the column sums / n, then the sums of `(x - mean) * (x - mean)` in the same column
//   order divided by n - unbiased, NaN for no rows. Mean's correction (attrs.ints[1]: sum /
//   (n - correction), NaN over no elements; ops/reduce.cpp) makes the two means those sums and
//   divisions, in that order.
// - logsumexp_rows: the column maxima (0 where infinite), the column sums of exp(x - shift) by
//   the exp op's vector math, then log(sum) + shift; -inf over no rows. The split shifts by the
//   maximum clamped to the finite range instead of 0 (clamp keeps the values floats, so that
//   the shift is a row value of the first kernel; a mask would be a Bool, which a kernel only
//   stores): a finite maximum is the same shift; a +inf maximum gives +inf either way (inf -
//   max = inf, exp, the sum, log and + max stay inf); a -inf maximum means every element is
//   -inf (or none is there), so the sum is 0 and the result -inf either way; NaN passes the
//   clamp as it passes eager's test. Amax's empty flag (attrs.ints[1]: the identity -inf over
//   no elements, where the API's amax raises) keeps an empty batch defined.
//
// - softmax_cols: the column maxima (no shift of infinities), the column sums of exp(x - m) in
//   the column order, 1 / s, and e * (1 / s) per element; with `log`, m + log(s) and x - that.
//   A column of -inf, or with a +inf, is NaN in both.
//
// Only where the CPU target would launch the kernels at the recorded sizes
// (KernelTarget::launches_column_reduction: 16 columns or more, and no wider split in eager)
// and x is row-major (eager reduces other layouts as gathered rows, another order). Plans are
// size-generic: a later run whose sizes the kernels decline runs the nodes eagerly, which
// reduce in the same column order (eager logsumexp takes the Cols plan at any column count).
#pragma once
#include "jit/passes/pass_graph.h"
#include "jit/target.h"

namespace kiln::jit::passes {

// Returns how many var, logsumexp, softmax and log_softmax nodes were split.
int split_column_reductions(PassGraph& pg, const KernelTarget& target);

}  // namespace kiln::jit::passes
