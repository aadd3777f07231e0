#include "ops/eager_helpers.h"

#include "runtime/dispatcher.h"

namespace kiln {

Tensor eager_contiguous(const Tensor& t, DType dtype) {
  const TensorImpl* x = t.impl();
  if (x->is_contiguous() && x->dtype() == dtype) return t;
  Tensor out = empty_tensor(x->sizes(), dtype, x->device());
  if (x->numel() > 0) {
    Attrs attrs;
    attrs.dtype = dtype;
    const Tensor in[] = {t};
    // The kernel of the tensor's device (the CPU's, or a CUDA one registered by jit/cuda).
    const OpDef& def = op_def(OpId::Cast);
    device_kernel(def, OpId::Cast, x->device())(OpCall{OpId::Cast, in, attrs}, out);
  }
  return out;
}

}  // namespace kiln
