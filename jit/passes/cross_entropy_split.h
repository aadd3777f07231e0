// cross_entropy written out as the chain of ops that its eager kernel computes (ops/reduce.h
// cross_entropy_total), so that the CPU JIT computes the heavy part, each row's logsumexp over
// the classes, in one row kernel with its producers (a bias add, a scale). The op itself was an
// eager step: its kernel gathers each row's target logit and raises on a bad target, which no
// loop kernel does. Rewritten, for logits x [N, C] ([C] unbatched) of dtype T and targets t:
//
//   p   = cross_entropy_target_logit(x, t)   [N, 1] Float64: the checks of the targets (the same
//                                            errors), x[n, t[n]] (0 for an ignored row): an
//                                            eager step over N elements
//   xd  = x.to(Float64)                      (Float32 only)
//   mx  = amax(xd, -1, keepdim)              (the identity -inf over no classes: no error)
//   lse = mx + log(sum(exp(xd - mx), -1, keepdim))
//   l   = (lse - p).masked_fill(t.unsqueeze(-1) == ignore, 0)
//   out = (sum(l) / sum(t != ignore)).to(T)  (the counted rows: an Int64 sum, exact in double)
//
// Exact (eager's bits): the eager kernel computes the max, the exps' sum and the losses' sum in
// double in the eager amax's and sum's order, lse - x[t] per row, total / counted; each step is
// one of these ops (an ignored row's 0 is the masked fill; its lse may be anything).
//
// Only on the CPU, and where x moves along its classes as one contiguous run in the first
// recording (else its rows would be gathered first; the op's own kernel does that once).
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many cross_entropy nodes were rewritten.
int split_cross_entropies(PassGraph& pg);

}  // namespace kiln::jit::passes
