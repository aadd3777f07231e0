// Backward rules of the shape and indexing ops (ops/shape.cpp, ops/index.cpp, ops/triangle.cpp):
// cat hands each input its slice of the gradient; index_select and gather scatter-add the
// gradient back to the positions they read; scatter_add passes the gradient to x and gathers it
// for src; tril/triu keep the same triangle of the gradient.
#include "ops/functions.h"
#include "ops/grad_utils.h"
#include "ops/meta_helpers.h"

namespace kiln {

namespace {

using Grads = std::span<Tensor>;

void cat_bw(const BackwardCall& c, Grads g) {
  int64_t dim = wrap_dim("cat", c.attrs.ints[0], c.grad.dim());
  int64_t offset = 0;
  for (size_t i = 0; i < c.input_info.size(); ++i) {
    const DimVector& s = c.input_info[i].sizes;
    bool legacy_empty = s.size() == 1 && s[0] == 0 && c.grad.dim() != 1;
    int64_t len = legacy_empty ? 0 : s[dim];
    if (c.needs_input(i))
      g[i] = legacy_empty ? zeros_like_grad(s, c.grad) : c.grad.narrow(dim, offset, len);
    offset += len;
  }
}

// index_select reads x[..., index[j], ...] into position j along dim: scatter the gradient
// back with an index of the gradient's shape.
void index_select_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const DimVector& xs = c.input_info[0].sizes;
  Tensor index = c.inputs[1];
  if (xs.empty()) {  // 0-dim x: the gradient is the sum of what was read
    g[0] = c.grad.sum().reshape(xs);
    return;
  }
  int64_t dim = wrap_dim("index_select", c.attrs.ints[0], static_cast<int64_t>(xs.size()));
  DimVector shape(xs.size(), 1);
  shape[dim] = index.numel();
  Tensor idx = index.reshape(shape).expand(c.grad.sizes());
  g[0] = scatter_add(zeros_like_grad(xs, c.grad), dim, idx, c.grad);
}

void gather_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  g[0] = scatter_add(zeros_like_grad(c.input_info[0].sizes, c.grad), c.attrs.ints[0], c.inputs[1],
                     c.grad);
}

// src elements outside the index's extent were not added anywhere: their gradient is zero.
void scatter_add_bw(const BackwardCall& c, Grads g) {
  if (c.needs_input(0)) g[0] = c.grad;
  if (!c.needs_input(2)) return;
  const Tensor& index = c.inputs[1];
  Tensor picked = gather(c.grad, c.attrs.ints[0], index);
  const DimVector& ss = c.input_info[2].sizes;
  if (picked.impl()->sizes() == ss) {
    g[2] = picked;
    return;
  }
  Tensor full = zeros_like_grad(ss, c.grad);
  Tensor part = full;
  for (int64_t d = 0; d < index.dim(); ++d) part = part.narrow(d, 0, index.size(d));
  part.copy_(picked);
  g[2] = full;
}

void triangle_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  int64_t k = c.attrs.ints[0];
  g[0] = c.op == OpId::Tril ? tril(c.grad, k) : triu(c.grad, k);
}

}  // namespace

void register_index_backward() {
  set_backward(OpId::Cat, cat_bw, 0);
  set_backward(OpId::IndexSelect, index_select_bw, save_input(1));
  set_backward(OpId::Gather, gather_bw, save_input(1));
  set_backward(OpId::ScatterAdd, scatter_add_bw, save_input(1));
  set_backward(OpId::Tril, triangle_bw, 0);
  set_backward(OpId::Triu, triangle_bw, 0);
}

}  // namespace kiln
