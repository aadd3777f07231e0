#include "jit/cuda/loop_launch.h"

#include "jit/cuda/cuda_target.h"

namespace kiln::jit::cuda {

DimVector cuda_byte_strides(const TensorImpl* t, const DimVector& sizes) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const int64_t lead = rank - t->dim();
  const int64_t item = static_cast<int64_t>(itemsize(t->dtype()));
  DimVector s(static_cast<size_t>(rank), 0);
  for (int64_t d = lead; d < rank; ++d) {
    const int64_t own = t->sizes()[d - lead];
    s[d] = own == 1 && sizes[d] != 1 ? 0 : t->strides()[d - lead] * item;
  }
  return s;
}

void launch_loop_kernel(const LoopKernel& k, const Tensor& out, std::span<const Tensor> inputs,
                        std::span<const Scalar> params) {
  const TensorImpl* o = out.impl();
  std::shared_ptr<CompiledKernel> kernel = cuda_target(o->device().index).compile(k);
  LaunchArgs a;
  a.sizes = o->sizes();
  a.ptrs.push_back(static_cast<char*>(o->data()));
  a.strides.push_back(cuda_byte_strides(o, a.sizes));
  for (const Tensor& t : inputs) {
    a.ptrs.push_back(static_cast<char*>(t.impl()->data()));
    a.strides.push_back(cuda_byte_strides(t.impl(), a.sizes));
  }
  a.params = params;
  kernel->launch(a);
}

}  // namespace kiln::jit::cuda
