// Counts of masks read by float arithmetic: `m.sum(dims)` of a Bool mask is an Int64 count, and a
// row kernel's element and row nodes read no integer row value (the row renderer keeps Int64 row
// values in registers of their own width). Where every reader of the count is an elementwise op
// that computes in a float type (its output a float: `x.sum(-1) / m.sum(-1)`, a masked mean;
// amax's gradient `g / (x == max).sum(-1, keepdim)`), the count becomes `cast(m,
// Float64).sum(dims)` and each reader reads it cast to its own float type.
//
// Exact: the count of n <= 2^53 ones is exact in Float64 in any summation order, and its cast to
// Float32 rounds the same integer to nearest as the eager op's conversion of the Int64 count to
// its compute type does; a Float64 reader gets the integer itself. Not for a count with another
// reader (an integer consumer, a graph output, a view), a sum with a promoted scalar, or off the
// CPU. Returns how many counts were rewritten.
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

int float_counts(PassGraph& pg);

}  // namespace kiln::jit::passes
