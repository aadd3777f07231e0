// The CUDA forms of kiln's eager ops, registered with the dispatcher's per-device seam
// (runtime/dispatcher.h, register_device_kernel) from kiln::init(): pointwise ops (unary,
// binary with broadcasting and type promotion, compares, where, masked_fill, clamp), casts,
// copies and fills, each a single-op loop kernel (op_kernel.h) launched through the CUDA target
// on the output's device, strided and broadcast operands included; and, through reduce_ops.h, the
// reductions and row ops. Ops without a CUDA form raise kiln::Error naming the op and the device.
#pragma once

namespace kiln::jit::cuda {

void register_cuda_kernels();

}  // namespace kiln::jit::cuda
