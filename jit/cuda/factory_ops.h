// The CUDA forms of the range factories arange, linspace and eye: source kernels per dtype
// (source_kernel.h) over a contiguous output, evaluating the CPU's formulas (ops/ranges.cpp) in
// the same IEEE operations, so the values are bitwise the CPU's: arange in int64 (wrapping) or in
// double as the CPU chooses, linspace by torch's two halves (in the float type, or in double for
// integers, with the step computed on the host as the CPU computes it), eye as 1 on the diagonal.
#pragma once
#include <vector>

#include "jit/cuda/source_kernel.h"

namespace kiln::jit::cuda {

// Every kernel of this file for every dtype its op accepts (CI compiles them all).
std::vector<CudaSource> cuda_factory_sources();

void register_cuda_factory_kernels();

}  // namespace kiln::jit::cuda
