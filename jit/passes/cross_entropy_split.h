// cross_entropy written out as the chain of ops that its eager kernel computes (ops/reduce.h
// cross_entropy_total), so that the CPU JIT computes the heavy part, each row's logsumexp and
// target logit over the classes, in one row kernel with its producers (a bias add, a scale).
// The op itself was an eager step: its kernel raises on a bad target, which no loop kernel
// does. Rewritten, for logits x [N, C] ([C] unbatched) of dtype T and targets t, with `like` a
// value of x's shape in memory anyway (x, or the input x is computed from elementwise: only its
// shape is read, so the kernel need not store x):
//
//   n   = cross_entropy_count(like, t)       the checks of the targets (the same errors), the
//                                            rows counted: an eager step over N targets
//   cls = indices_of(like)                   0 .. C-1 (Int64 [C])
//   mx  = amax(x, -1, keepdim)               (the identity -inf over no classes: no error)
//   lse = (mx + log(sum(exp(x - mx), -1, keepdim))).to(Float64)
//   p   = sum(x.masked_fill(cls != t.unsqueeze(-1), 0), -1, keepdim).to(Float64)   x[t], exactly
//         (where like is x itself, the logits are in memory: p = cross_entropy_target_logit(x,
//         t), an eager step gathering x[t] ([N, 1] Float64, 0 for an ignored row) instead of a
//         compare and an add per element, and no cls)
//   l   = (lse - p).masked_fill(t.unsqueeze(-1) == ignore, 0)
//   out = (sum(l) / n).to(T)
//
// Exact (eager's bits): the eager kernel computes each row's max, exps' sum and logsumexp in T
// (as PyTorch's log_softmax does) in the eager amax's and sum's order, its loss lse - x[t] and
// the losses' sum in double, total / counted; each step is one of these ops (the sum of zeros and
// x[t] is x[t]; -0 becomes +0 there, which lse - p cannot tell apart: lse is never -0; an ignored
// row's 0 is the masked fill, whatever its lse). In T, the row part is the forward of the softmax
// that the gradient computes: a training step's row kernel computes the exps once (kernel CSE).
//
// Only on the CPU, and where x moves along its classes as one contiguous run in the first
// recording (else its rows would be gathered first; the op's own kernel does that once).
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many cross_entropy nodes were rewritten.
int split_cross_entropies(PassGraph& pg);

}  // namespace kiln::jit::passes
