// Backward rules of the view ops: gradients reach a view's base through these (the inverse view,
// a sum for expand, and a zero-filled tensor with the slice written for slice/select).
#include "ops/functions.h"
#include "ops/grad_utils.h"

namespace kiln {

namespace {

using Grads = std::span<Tensor>;

void reshape_bw(const BackwardCall& c, Grads g) { g[0] = c.grad.reshape(c.input_info[0].sizes); }

void expand_bw(const BackwardCall& c, Grads g) { g[0] = sum_to(c.grad, c.input_info[0].sizes); }

void permute_bw(const BackwardCall& c, Grads g) {
  const DimVector& perm = c.attrs.dims;
  int64_t n = static_cast<int64_t>(perm.size());
  DimVector inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[perm[i] < 0 ? perm[i] + n : perm[i]] = i;
  g[0] = c.grad.permute(inverse);
}

// The gradient of a slice or select is zero outside the selected part.
void slice_bw(const BackwardCall& c, Grads g) {
  Tensor full = zeros_like_grad(c.input_info[0].sizes, c.grad);
  const auto& a = c.attrs.ints;
  Tensor part = c.op == OpId::Slice ? full.slice(a[0], a[1], a[2], a[3]) : full.select(a[0], a[1]);
  part.copy_(c.grad);
  g[0] = full;
}

}  // namespace

void register_view_backward() {
  set_backward(OpId::View, reshape_bw, 0);
  set_backward(OpId::Squeeze, reshape_bw, 0);
  set_backward(OpId::Unsqueeze, reshape_bw, 0);
  set_backward(OpId::Expand, expand_bw, 0);
  set_backward(OpId::Permute, permute_bw, 0);
  set_backward(OpId::Slice, slice_bw, 0);
  set_backward(OpId::Select, slice_bw, 0);
}

}  // namespace kiln
