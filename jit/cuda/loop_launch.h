// Launching a loop kernel (jit/loop/loop_kernel.h) over tensors on a CUDA device: operand 0 is
// `out`, the inputs follow, each seen with the output's sizes (an input of lower rank or with
// size-1 dims broadcasts: byte stride 0). Shared by the source files of the CUDA op forms that
// build their own loop kernels (random_ops.cpp, index_ops.cpp).
#pragma once
#include <span>

#include "jit/loop/loop_kernel.h"
#include "runtime/scalar.h"
#include "runtime/tensor.h"

namespace kiln::jit::cuda {

// Byte strides of `t` viewed with `sizes` (its own rank or fewer dims, aligned to the right).
DimVector cuda_byte_strides(const TensorImpl* t, const DimVector& sizes);

// Compiles (or finds) `k` for out's device and queues it over out's index space.
void launch_loop_kernel(const LoopKernel& k, const Tensor& out, std::span<const Tensor> inputs,
                        std::span<const Scalar> params);

}  // namespace kiln::jit::cuda
