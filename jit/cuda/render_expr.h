// The pieces of a rendered CUDA kernel that the pointwise renderer (render.cpp) and the row
// kernel renderer (render_reduce.cpp) share: the header-free prelude of helpers, the C++ type of a
// value type, and one expression as a C++ expression over earlier values `v<id>`, operand
// addresses `p<j> + o<j>` and the argument words `a.w[...]` (render.h, CudaArgLayout).
#pragma once
#include <string>

#include "jit/cuda/render.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit::cuda {

const char* cuda_prelude();
const char* cuda_type(DType t);  // float, double, int, kiln_i64, bool
// Every expression but Reduce* (a row kernel's passes compute those) and RandUniform. `sfx`
// suffixes the names of its operands and offsets (an unrolled loop's u-th element: v3_1, o0_1).
std::string render_cuda_expr(const LoopKernel& k, const Expr& e, const CudaArgLayout& layout,
                             const std::string& sfx = "");

}  // namespace kiln::jit::cuda
