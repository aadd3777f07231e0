// Philox4x32-10 and the number formulas of docs/random.md as CUDA C++ text, for the kernels kiln
// renders: the loop IR's RandUniform leaf (render.cpp) and the random kernels (random_ops.cpp).
// They reproduce runtime/philox.h and ops/random.h bit for bit: the same rounds (64-bit products
// split into halves), the same counter words ({lo32, hi32, 0, 0}) and key ({lo32(seed),
// hi32(seed)}), the same exact integer-to-float conversions. randn's log/cos are CUDA's double
// functions, which may differ from glibc's in the last double ulp (docs/random.md states the
// bound). The text needs the prelude's kiln_u64 / kiln_i64 typedefs and KILN_INLINE.
#pragma once
#include <array>
#include <string>

#include "jit/loop/loop_kernel.h"

namespace kiln::jit::cuda {

// Device functions: kiln_philox(seed, counter, r), kiln_uniform_f32(r), kiln_uniform_f64(r),
// kiln_normal_f32(r), kiln_normal_f64(r) (as double, before the rounding to the dtype).
const char* philox_cuda_source();

// The CUDA expression of a RandUniform leaf `e` (Float32 or Float64): the uniform draw of element
// `index` (a kiln_i64 expression: the element's row-major index in the index space) from the
// Philox words `words` (expressions of the four Int32 params: seed low, seed high, counter low,
// counter high, each a 32-bit word in a 64-bit argument word), as the CPU JIT's
// emit_rand_uniform does: counter = (counter high << 32 | counter low) + index.
std::string render_rand_uniform(const Expr& e, const std::string& index,
                                const std::array<std::string, 4>& words);

}  // namespace kiln::jit::cuda
