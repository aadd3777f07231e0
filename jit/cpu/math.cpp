#include "jit/cpu/math.h"

namespace kiln::jit {

bool cpu_math_supported(ExprOp) { return false; }

}  // namespace kiln::jit
