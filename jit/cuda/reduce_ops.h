// The CUDA forms of the reductions and the nn row ops, each one or two row kernels (loop_kernel.h
// "Row kernels", rendered by render_reduce.h) launched on the output's device:
//   sum prod mean amax amin var logsumexp all any   over any set of dims (argmax argmin: one),
//   keepdim or not: the
//       index space is the input's dims with the reduced ones moved last (strides make any dims
//       the row); the output's strides over the row are 0;
//   softmax log_softmax   a row along `dim`;   layer_norm   a row over normalized_shape;
//   cross_entropy   the per-row losses in Float64 (each row's logsumexp in the logits' dtype),
//                   then their mean in a second kernel.
// dtypes are eager's (ops/reduce.cpp): sum and prod of integers and Bool accumulate in Int64
// (wrapping), amax/amin keep the dtype (Bool through Int32), logsumexp/softmax of integers
// compute in Float32, layer_norm computes in its input's dtype and cross_entropy's losses and
// mean are Float64 as the CPU kernels do.
// The float reductions go through the CPU JIT's lowering (jit/lower/lower_reduce.h); the others
// are written here in the same IR. argmax/argmin along one dim: the extreme, then the least
// index holding it (an input of the row's indices: the IR has no element index).
//
// cross_entropy reads its targets on the host first (a sync point) and raises eager's error for
// one out of range before anything runs. Needs no GPU to build kernels: CI compiles them all.
#pragma once
#include <vector>

#include "jit/loop/loop_kernel.h"
#include "jit/target.h"
#include "runtime/dispatcher.h"

namespace kiln::jit::cuda {

// Every row kernel `call` launches (one, or two for cross_entropy), its result of dtype `out`.
// Raises kiln::Error naming the op when it has no CUDA form.
std::vector<LoopKernel> row_op_kernels(const OpCall& call, DType out);

// The CUDA form of `call` (one of the ops above) writing `out`, its kernels compiled by `target`:
// the output device's CUDA target, or in tests a stand-in that runs the CUDA source elsewhere.
void run_cuda_row_op(const OpCall& call, const Tensor& out, KernelTarget& target);

// Registers the ops above with the dispatcher's per-device seam (called by eager_ops.cpp).
void register_cuda_reduce_kernels();

}  // namespace kiln::jit::cuda
