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

}  // namespace kiln
