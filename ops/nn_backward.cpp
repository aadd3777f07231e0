// Backward rules of the nn primitives: softmax, log_softmax (ops/softmax.cpp), layer_norm
// (ops/layer_norm.cpp), cross_entropy (ops/losses.cpp), dropout (ops/dropout.cpp) and embedding
// (ops/embedding.cpp). Written with kiln ops only, so a recorded backward pass is an ordinary
// graph. The composites (linear, mse_loss, scaled_dot_product_attention) need no rule.
#include <numeric>

#include "ops/functions.h"
#include "ops/grad_utils.h"
#include "ops/losses.h"

namespace kiln {

namespace {

using Grads = std::span<Tensor>;

TensorOptions like(const Tensor& t) { return dtype(t.dtype()).device(t.device()); }

// y = softmax(x): gx = y * (g - sum(g * y)) along dim.
void softmax_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const Tensor& y = c.output;
  const int64_t dim = c.attrs.ints[0];
  Tensor gy = c.grad * y;
  g[0] = gy - y * sum(gy, {dim}, /*keepdim=*/true);
}

// y = log_softmax(x): gx = g - exp(y) * sum(g) along dim.
void log_softmax_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const int64_t dim = c.attrs.ints[0];
  g[0] = c.grad - exp(c.output) * sum(c.grad, {dim}, /*keepdim=*/true);
}

// Inputs x, [weight], [bias] (attrs.ints[0] / ints[1] say which are present). Mean and rstd are
// recomputed from the saved x rather than saved by the forward kernel (it writes one output).
// With xhat = (x - mean) * rstd and gh = g * weight (or g):
//   gx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) over the normalized dims,
//   gweight = sum of g * xhat over the leading dims, gbias = sum of g over them.
void layer_norm_bw(const BackwardCall& c, Grads g) {
  const Tensor& x = c.inputs[0];
  const bool has_w = c.attrs.ints[0] != 0, has_b = c.attrs.ints[1] != 0;
  const DimVector& ns = c.attrs.dims;
  const int64_t nd = static_cast<int64_t>(ns.size());
  DimVector dims(static_cast<size_t>(nd));
  std::iota(dims.begin(), dims.end(), x.dim() - nd);
  const double eps = c.attrs.scalars[0].to_double();

  Tensor xc = x - mean(x, dims, /*keepdim=*/true);
  Tensor rstd = rsqrt(mean(xc * xc, dims, /*keepdim=*/true) + eps);
  Tensor xhat = xc * rstd;
  if (c.needs_input(0)) {
    Tensor gh = has_w ? c.grad * c.inputs[1] : c.grad;
    g[0] = rstd * (gh - mean(gh, dims, true) - xhat * mean(gh * xhat, dims, true));
  }
  if (has_w && c.needs_input(1)) g[1] = sum_to(c.grad * xhat, ns);
  const size_t bias_at = has_w ? 2 : 1;
  if (has_b && c.needs_input(bias_at)) g[bias_at] = sum_to(c.grad, ns);
}

// loss = sum over rows n with target[n] != ignore_index of (logsumexp(x[n]) - x[n, target[n]]),
// divided by the number of such rows. So gx[n] = (softmax(x[n]) - onehot(target[n])) * g / count
// for counted rows and 0 for ignored ones (also when every row is ignored, as PyTorch).
void cross_entropy_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const Tensor& logits = c.inputs[0];
  const Tensor& target = c.inputs[1];
  const int64_t C = logits.size(-1);
  Tensor valid = ne(target, c.attrs.ints[0]);
  // The one-hot rows as a comparison with the class indices (pointwise: fused into softmax's row
  // kernel by the JIT, and a Bool tensor eagerly, not one_hot's Int64 one). An ignored target
  // (-100 by default) matches no class, or after the cast below may match one: its row is
  // zeroed below either way. The comparison's dtype: ops/losses.h class_index_dtype.
  const DType index = class_index_dtype(logits.dtype(), C);
  Tensor onehot =
      eq(arange(C, dtype(index).device(target.device())), target.to(index).unsqueeze(-1))
          .to(logits.dtype());
  Tensor count = sum(valid.to(logits.dtype()));
  Tensor d = (softmax(logits, -1) - onehot) * (c.grad / count);
  g[0] = where(valid.unsqueeze(-1), d, zeros_like(d));
}

// The mask is a function of the seed and Philox offset stored in the attrs, so dispatching
// Dropout again with the same attrs on the gradient gives g * mask / (1 - p), exactly the mask
// and scale of the forward (element i draws counter offset + i in both).
void dropout_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const Tensor in[] = {c.grad};
  g[0] = dispatch(OpId::Dropout, in, c.attrs);
}

// gweight[v] = sum of the gradient rows whose index is v (scatter_add along dim 0); the indices
// get no gradient.
void embedding_bw(const BackwardCall& c, Grads g) {
  if (!c.needs_input(0)) return;
  const DimVector& ws = c.input_info[0].sizes;
  const int64_t V = ws[0], D = ws[1];
  const int64_t n = c.inputs[1].numel();
  Tensor idx = c.inputs[1].reshape({n, 1}).to(kInt64).expand({n, D});
  Tensor rows = c.grad.reshape({n, D});
  g[0] = scatter_add(zeros({V, D}, like(c.grad)), 0, idx, rows);
}

}  // namespace

void register_nn_backward() {
  set_backward(OpId::Softmax, softmax_bw, kSaveOutput);
  set_backward(OpId::LogSoftmax, log_softmax_bw, kSaveOutput);
  // Input 1 is the weight when present (the rule reads it); a bias there is saved needlessly but
  // cheaply (an alias, no copy).
  set_backward(OpId::LayerNorm, layer_norm_bw, save_input(0) | save_input(1));
  set_backward(OpId::CrossEntropy, cross_entropy_bw, save_input(0) | save_input(1));
  set_backward(OpId::Dropout, dropout_bw, 0);
  set_backward(OpId::Embedding, embedding_bw, save_input(1));
}

}  // namespace kiln
