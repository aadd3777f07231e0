// The CUDA forms of the index and shape ops: index_select, gather, embedding, scatter_add,
// one_hot, tril, triu (source kernels rendered per dtype, source_kernel.h), and cat and
// as_strided_scatter (copies into views of the output through the
// CUDA copy kernel). Every kernel computes what the CPU kernel computes, bitwise: gathers copy,
// scatter_add adds each output element's contributions in the CPU's order (one thread per output
// column walks the indexed dim upwards: no atomics). The factories are in factory_ops.h.
//
// Index values are checked in the kernels: an index out of range is reported to the device's
// error word (runtime/cuda/kernel_errors.h) and raised at the next sync point, naming the op, the
// index and the valid range; the element it would have produced is written as 0.
#pragma once
#include <vector>

#include "jit/cuda/source_kernel.h"

namespace kiln::jit::cuda {

// Every source kernel of this file for every dtype the CPU op accepts (CI compiles them all).
std::vector<CudaSource> cuda_index_sources();

void register_cuda_index_kernels();

}  // namespace kiln::jit::cuda
