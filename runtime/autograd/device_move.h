// Autograd for Tensor::to(Device): the moved tensor's node hands its gradient back to the source
// device (PyTorch's ToCopyBackward). Moving a tensor that requires grad is then an ordinary
// differentiable step: x.to(kCUDA) ... backward() leaves x.grad() on x's own device, and a
// CUDA result moved to the CPU (a loss read on the host) sends its gradient back to the GPU.
#pragma once
#include "runtime/tensor.h"

namespace kiln {

// Makes `out` (the copy of `input` on another device) the output of a node whose backward moves
// the gradient to `input`'s device. Called by to(Device) when grad mode is on and `input`
// requires grad.
void record_device_move(const Tensor& input, const Tensor& out);

}  // namespace kiln
