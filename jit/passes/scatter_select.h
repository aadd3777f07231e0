// A scatter_add into zeros of one value per line, rewritten as a select, so that the CPU JIT
// fuses it into its readers: the gradient of `x.gather(-1, t)` with t of size 1 along the
// gathered dim (a hand-written NLL: `-log_softmax(z, -1).gather(1, t.unsqueeze(1)).mean()`),
// which eager computes as a fill of zeros and a scatter_add, two passes over [N, C] in memory
// that the gradient's next kernel reads back. For out = scatter_add(full(shape, 0), -1, index,
// src) of shape [..., C], index and src of size 1 along the last dim:
//
//   k   = scatter_row_index(index) {shape}      per line of out: its class, -1 where the index
//                                               does not reach the line; scatter_add's error for
//                                               an index out of [0, C) (kChecksData)
//   v   = scatter_row_value(src, index) {shape} per line: 0 + src, 0 where not reached
//   cls = indices_of(expand(full([], 0), [C]))  0 .. C-1 (ops/losses.h class_index_dtype:
//                                               Int32 for Float32, else Int64), as k
//   out = masked_fill(v, cls != k, 0)
//
// (ops/scatter_rows.cpp.) Exact, eager's bits: each output element is the fill's 0 plus at most
// one source element (index has one element per line), 0 + src in both; the rest the fill's +0.
// The two per-line ops take the index's and the source's extents from the run's tensors, so a
// recording whose index reaches fewer lines than the output has (a graph input of another batch
// size: plans are size-generic) computes what eager does; the output's shape is the fill's
// attrs, which the region key holds. A fill of +0 only (another value, or -0, needs its own
// sum); the last dim only; not Bool; on the CPU.
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many scatter_add nodes were rewritten.
int scatter_adds_to_selects(PassGraph& pg);

}  // namespace kiln::jit::passes
