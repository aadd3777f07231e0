// Algebraic simplification with bit-exact rules only: each rewrite gives, for every input, the
// bits the eager kernels give (NaN sign and payload aside, as everywhere: docs/jit.md). The
// scalar of a rule is read as the eager kernel converts it (Scalar::to<T> of the compute dtype),
// and a rule applies only where the result has its operand's shape and dtype (no broadcasting,
// no promotion). docs/jit.md lists the rules and why each is exact; the ones that are not exact
// (x + 0: -0 + 0 is +0; x * 0: inf * 0 is NaN and -1 * 0 is -0; x - x: inf - inf is NaN) are
// left out on purpose.
//
// A rule that replaces a value by its operand x never applies to a graph output (the output
// would alias an input or another output), and applies only where x is a fresh row-major value
// or every reader of the replaced value is elementwise (kWritesAnyLayout): a reduction, matmul or
// view reads layouts, so handing it x's strides instead of a row-major copy could change its
// summation order or its result. Nodes with promoted scalars are never rewritten.
#pragma once
#include "jit/passes/pass_graph.h"

namespace kiln::jit::passes {

// Returns how many nodes were rewritten or bypassed (dce() drops the bypassed ones).
int simplify(PassGraph& pg);

}  // namespace kiln::jit::passes
