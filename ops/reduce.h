// Shared between the reduction meta functions (ops/reduce.cpp) and kernels (ops/reduce_eager.cpp).
#pragma once
#include <cstdint>

#include "runtime/dispatcher.h"

namespace kiln {

// The name users write ("sum", "amax", ...), for messages.
const char* reduce_name(OpId id);
// Bit d set when dim d of input 0 is reduced (validated: wrapped, no duplicates).
uint64_t reduced_mask(const OpCall& c);
// The eager kernel of every reduction op.
void reduce_eager(const OpCall& c, const Tensor& out);

}  // namespace kiln
