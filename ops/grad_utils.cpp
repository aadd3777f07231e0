#include "ops/grad_utils.h"

#include "ops/functions.h"

namespace kiln {

Tensor sum_to(const Tensor& grad, const DimVector& shape) {
  const DimVector& g = grad.impl()->sizes();
  if (g == shape) return grad;
  size_t lead = g.size() - shape.size();
  DimVector dims;
  for (size_t i = 0; i < g.size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && g[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return r.reshape(shape);
}

Tensor zeros_like_grad(const DimVector& shape, const Tensor& grad) {
  return zeros(shape, TensorOptions().dtype(grad.dtype()).device(grad.device()));
}

}  // namespace kiln
