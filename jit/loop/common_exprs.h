// Common subexpressions of a loop kernel, merged: an expression equal to an earlier one (the same
// op, type, operands after merging, input or param number, and constant bits) is replaced by
// that one, and expressions no store reads are dropped. Every expression is a pure function of
// its operands and the element's position (a Reduce: of its row), so the kernel computes the
// same bits with fewer expressions. Why it matters: lowering expands graph nodes one by one, so
// layer_norm's mean and variance each sum the row (`ReduceSum %0` twice), and a row kernel makes
// one pass over the row per Reduce: merged, a pass fewer to compile and to run.
// Inputs and params are kept as they are (operand numbering is the launch's contract), even
// where no expression reads them any more.
#pragma once
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

LoopKernel merge_common_exprs(const LoopKernel& k);

}  // namespace kiln::jit
