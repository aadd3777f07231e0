// Whether the JIT's lane backend (jit::AsmVecOps, jit/cpu/vec_emitter.h) has vecmath's optional
// reduce_pio2_huge hook, the exact reduction that eager sin/cos use past kHuge (|x| > 6000 for
// float32, 1.5e6 for float64; ops/cpu/vecmath/sin_cos.h). Until it does, JIT sin/cos keep the
// Cody-Waite reduction there and differ from eager in those lanes, so the JIT tests that compare
// with eager bit for bit keep sin/cos arguments within kHuge (jit_kernel_util.h's reference, the
// record fuzzer). Once AsmVecOps implements the hook this turns true and every such exemption
// goes inert: the tests then check the huge lanes bitwise too.
#pragma once
#include "jit/cpu/vec_emitter.h"

namespace kiln::testing {

template <class T>
inline constexpr bool kJitHasHugeSinCos = requires(const jit::AsmVecOps<T>& o,
                                                   typename jit::AsmVecOps<T>::F x,
                                                   typename jit::AsmVecOps<T>::F& r,
                                                   typename jit::AsmVecOps<T>::I& k) {
  o.reduce_pio2_huge(x, 1.0, r, k);
};

// The bound below which JIT and eager sin/cos agree today, for either dtype.
inline constexpr double kSinCosJitBound = 6000.0;

}  // namespace kiln::testing
