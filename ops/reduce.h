// Shared between the reduction meta functions (ops/reduce.cpp) and kernels (ops/reduce_eager.cpp).
#pragma once
#include <cstdint>

#include "runtime/dispatcher.h"

namespace kiln {

// The name users write ("sum", "amax", ...), for messages.
const char* reduce_name(OpId id);
// Bit d set when dim d of input 0 is reduced (validated: wrapped, no duplicates).
uint64_t reduced_mask(const OpCall& c);
// Raises kiln::Error for an op that is not a reduction. Out of line so the per-ISA kernel file
// instantiates no error-formatting templates (tests/cmake/check_isa_symbols.cmake).
[[noreturn]] void fail_not_a_reduction(OpId id);
// The eager kernel of every reduction op (the active ISA's build of ops/cpu/reduce_kernels.cpp).
void reduce_eager(const OpCall& c, const Tensor& out);
// softmax of m contiguous rows of n elements (x and y may be the same memory): each row's amax,
// exp(x - max), their sum, y = e * (1 / sum), the max and the sum in the eager amax's and sum's
// order (the active ISA's build of ops/cpu/reduce_kernels.cpp), so the result is bit for bit
// that chain of eager ops; the JIT's row kernels lower softmax the same way.
// `log`: log_softmax, y = x - (max + log(sum)) with the same max and sum (x and y must not be
// the same memory: y holds the exps before x is read again).
void softmax_rows(const float* x, float* y, int64_t m, int64_t n, bool log = false);
void softmax_rows(const double* x, double* y, int64_t m, int64_t n, bool log = false);
// softmax (log_softmax) along the middle dim of a contiguous [outer, n, inner] (inner > 1):
// per column its max and its sum of exp(x - max), both in the column order of every column
// reduction (reduce_loops.h run_cols, rows walked in memory order), then y = exp(x - max) * (1 /
// sum) (x - (max + log(sum))), row by row (the active ISA's build of
// ops/cpu/reduce_kernels.cpp; the same bits on every ISA).
void softmax_cols(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log);
void softmax_cols(const double* x, double* y, int64_t outer, int64_t n, int64_t inner, bool log);
// layer_norm of m contiguous rows of n >= 1 elements (ops/layer_norm.cpp; w and b: n elements or
// null), in T (as PyTorch's CPU layer_norm): the mean and the biased variance as the eager mean op
// of x and of the squared deviations compute them, rstd = 1 / sqrt(var + T(eps)), y = ((x - mean)
// * rstd) * w + b: bit for bit that chain of eager ops (the JIT rewrites layer_norm into it,
// jit/passes/layer_norm_split.h).
void layer_norm_rows(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t n,
                     double eps);
void layer_norm_rows(const double* x, const double* w, const double* b, double* y, int64_t m,
                     int64_t n, double eps);
// cross_entropy's sum of row losses (ops/losses.cpp) over m contiguous rows of n classes, targets
// t (validated: in [0, n) or `ignore`): per row, in the logits' dtype, lse = mx + log(sum(exp(x -
// mx))), mx the row's amax, the max and the exps' sum in the eager amax's and sum's order (as
// PyTorch's log_softmax computes a float row in float); the row's loss double(lse) - double(x[t])
// (0 for an ignored row); then the losses' sum in double in the eager sum's order. Bit for bit
// that chain of eager ops (the JIT rewrites cross_entropy into it, jit/passes/
// cross_entropy_split.h).
double cross_entropy_total(const float* x, const int64_t* t, int64_t m, int64_t n, int64_t ignore);
double cross_entropy_total(const double* x, const int64_t* t, int64_t m, int64_t n, int64_t ignore);

}  // namespace kiln
