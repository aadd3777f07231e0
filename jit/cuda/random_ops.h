// The CUDA forms of the random ops, drawing the CPU's Philox numbers (docs/random.md): the
// generator state advances at dispatch time, in ops/ (seed and first counter in the attrs), on
// every device alike, so a program gives the same numbers call after call on CUDA and on the CPU.
//   rand, dropout: loop kernels through the loop IR's RandUniform leaf (render.cpp renders it with
//     philox_cuda.h), dropout lowered by the CPU JIT's own lower_dropout: bitwise the CPU's.
//   randn, randint: source kernels (source_kernel.h) per dtype: the same Philox words, then the
//     CPU's transform (randint: 64-bit modulo, bitwise; randn: Box-Muller in double with CUDA's
//     log/cos, within the bound of docs/random.md).
#pragma once
#include <string>

#include "jit/cuda/source_kernel.h"
#include "jit/loop/loop_kernel.h"
#include "runtime/dtype.h"

namespace kiln::jit::cuda {

// The source kernel of randn (`normal`) or randint for `dtype`, and its name (CI compiles them).
CudaSource randn_source(DType dtype);
CudaSource randint_source(DType dtype);

// The loop kernels of rand and dropout for `dtype` (Float32, Float64). rand: params 0..3 are the
// Philox words; dropout: param 0 is p (Float64), params 1..4 the Philox words, input 0 is x.
LoopKernel cuda_rand_loop_kernel(DType dtype);
LoopKernel cuda_dropout_loop_kernel(DType dtype);

void register_cuda_random_kernels();

}  // namespace kiln::jit::cuda
