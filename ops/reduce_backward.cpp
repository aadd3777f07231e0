// Backward rules of the reductions (ops/reduce.cpp). The gradient of the reduced result is first
// broadcast back over the reduced dims (expand_back), then shaped by the op: 1/N for mean, the
// product of the other elements for prod, an even split between tied extremes for amax/amin (as
// PyTorch), softmax weights for logsumexp, 2(x - mean)/(N - correction) for var.
#include <algorithm>

#include "ops/functions.h"
#include "ops/grad_utils.h"
#include "ops/meta_helpers.h"

namespace kiln {

namespace {

using Grads = std::span<Tensor>;

// The reduced dims as a sorted list (empty attrs.dims means all dims).
DimVector reduced_dims(const BackwardCall& c) {
  int64_t nd = static_cast<int64_t>(c.input_info[0].sizes.size());
  uint64_t mask = dims_mask("backward", c.attrs.dims, nd);
  DimVector dims;
  for (int64_t d = 0; d < nd; ++d)
    if (mask & (1ull << d)) dims.push_back(d);
  return dims;
}

// Brings a reduced tensor (keepdim or not) back to the input's shape by broadcasting.
Tensor expand_back(const BackwardCall& c, const Tensor& t) {
  const DimVector& in = c.input_info[0].sizes;
  Tensor r = t;
  if (!c.attrs.ints[0] && !in.empty()) {
    for (int64_t d : reduced_dims(c)) r = r.unsqueeze(d);
  }
  return r.expand(in);
}

int64_t reduced_count(const BackwardCall& c) {
  int64_t n = 1;
  for (int64_t d : reduced_dims(c)) n *= c.input_info[0].sizes[d];
  return n;
}

void sum_bw(const BackwardCall& c, Grads g) {
  if (c.needs_input(0)) g[0] = expand_back(c, c.grad);
}

void mean_bw(const BackwardCall& c, Grads g) {
  if (c.needs_input(0)) g[0] = expand_back(c, c.grad) / static_cast<double>(reduced_count(c));
}

// d prod / d x_i = prod of the other elements: y / x_i where x_i != 0; where x_i is the only zero
// of its reduction, the product of the non-zero others; otherwise 0.
void prod_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const Tensor& x = c.inputs[0];
  DimVector dims = reduced_dims(c);
  Tensor gy = expand_back(c, c.grad);
  Tensor is_zero = x == 0.0;
  Tensor x_safe = where(is_zero, ones_like(x), x);
  Tensor regular = gy * expand_back(c, c.output) / x_safe;
  Tensor zeros_per_row = sum(is_zero, dims, /*keepdim=*/true).expand(x.sizes());
  Tensor others = prod(x_safe, dims, /*keepdim=*/true).expand(x.sizes());
  Tensor at_zero = where(zeros_per_row == 1, gy * others, zeros_like(gy));
  g[0] = where(is_zero, at_zero, regular);
}

void extreme_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const Tensor& x = c.inputs[0];
  Tensor hit = x == expand_back(c, c.output);
  Tensor count = sum(hit, reduced_dims(c), /*keepdim=*/true).expand(x.sizes());
  g[0] = where(hit, expand_back(c, c.grad) / count, zeros_like(x));
}

void logsumexp_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  g[0] = expand_back(c, c.grad) * exp(c.inputs[0] - expand_back(c, c.output));
}

void var_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const Tensor& x = c.inputs[0];
  double n = static_cast<double>(reduced_count(c)) - (c.attrs.ints[1] ? 1.0 : 0.0);
  Tensor centered = x - mean(x, reduced_dims(c), /*keepdim=*/true);
  g[0] = expand_back(c, c.grad) * centered * (2.0 / n);
}

}  // namespace

void register_reduce_backward() {
  set_backward(OpId::Sum, sum_bw, 0);
  set_backward(OpId::Mean, mean_bw, 0);
  set_backward(OpId::Prod, prod_bw, save_input(0) | kSaveOutput);
  set_backward(OpId::Amax, extreme_bw, save_input(0) | kSaveOutput);
  set_backward(OpId::Amin, extreme_bw, save_input(0) | kSaveOutput);
  set_backward(OpId::Logsumexp, logsumexp_bw, save_input(0) | kSaveOutput);
  set_backward(OpId::Var, var_bw, save_input(0));
}

}  // namespace kiln
