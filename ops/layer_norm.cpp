// layer_norm: a primitive row kernel (OpId::LayerNorm).
// Inputs: x, then weight if present, then bias if present (each of shape normalized_shape).
// Attrs: dims = normalized_shape; scalars[0] = eps; ints[0] = 1 when weight is given, ints[1] = 1
// when bias is given.
//
// y = (x - mean) / sqrt(var + eps) * weight + bias over the trailing dims named by
// normalized_shape, with the biased variance (divide by D), as torch.nn.functional.layer_norm.
// x must be Float32/Float64 (PyTorch rejects integer inputs too) and weight/bias of x's dtype.
// Mean and variance are computed in x's dtype, as PyTorch's CPU kernel does, in the order of the
// eager reductions (ops/reduce.h layer_norm_rows: the mean op of x, then of the squared
// deviations), so layer_norm is bit for bit that chain of eager ops and the JIT fuses it into a
// row kernel with eager's bits (jit/passes/layer_norm_split.h). Until 2026-11-29 the sums were 8
// interleaved partial sums (another order, the same accuracy); until 2026-12-01 everything was
// in double (x.to(Float64)), which halved the lanes of the JIT's Float32 row kernel.
#include <cmath>

#include "ops/eager_helpers.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/nn_registry.h"
#include "ops/reduce.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

void layer_norm_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& xt = c.inputs[0];
  const TensorImpl* x = xt.impl();
  const DimVector& ns = c.attrs.dims;
  const bool has_w = c.attrs.ints[0] != 0, has_b = c.attrs.ints[1] != 0;
  KILN_CHECK(c.inputs.size() == 1u + has_w + has_b,
             "layer_norm: expected {} inputs for the weight/bias flags, got {}", 1 + has_w + has_b,
             c.inputs.size());
  KILN_CHECK(!ns.empty(), "layer_norm: normalized_shape must have at least one dim (input {})",
             describe(xt));
  KILN_CHECK(is_floating(x->dtype()), "layer_norm: expected a Float32 or Float64 input, got {}",
             describe(xt));
  const int64_t nd = static_cast<int64_t>(ns.size());
  bool match = x->dim() >= nd;
  for (int64_t i = 0; match && i < nd; ++i) match = x->sizes()[x->dim() - nd + i] == ns[i];
  KILN_CHECK(match,
             "layer_norm: normalized_shape {} does not match the trailing dims of the input {}",
             shape_str(ns), describe(xt));
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const Tensor& p = c.inputs[i];
    const char* what = (i == 1 && has_w) ? "weight" : "bias";
    KILN_CHECK(p.impl()->sizes() == ns, "layer_norm: {} has shape {} but normalized_shape is {}",
               what, describe(p), shape_str(ns));
    KILN_CHECK(p.impl()->dtype() == x->dtype(), "layer_norm: {} {} must have the input's dtype {}",
               what, describe(p), x->dtype());
  }
  m.sizes = x->sizes();
  m.dtype = x->dtype();
  m.device = common_device("layer_norm", c.inputs);
}

void layer_norm_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl* o = out.impl();
  const Tensor x = eager_contiguous(c.inputs[0]);
  const bool has_w = c.attrs.ints[0] != 0, has_b = c.attrs.ints[1] != 0;
  Tensor w, b;
  if (has_w) w = eager_contiguous(c.inputs[1]);
  if (has_b) b = eager_contiguous(c.inputs[has_w ? 2 : 1]);
  const int64_t D = numel_of(c.attrs.dims);
  if (D == 0 || o->numel() == 0) return;  // no rows, or rows of nothing: no element
  const int64_t rows = o->numel() / D;
  const double eps = c.attrs.scalars[0].to<double>();
  visit_dtype(o->dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      layer_norm_rows(static_cast<const T*>(x.impl()->data()),
                      has_w ? static_cast<const T*>(w.impl()->data()) : nullptr,
                      has_b ? static_cast<const T*>(b.impl()->data()) : nullptr,
                      static_cast<T*>(o->data()), rows, D, eps);
    } else {
      fail("layer_norm: internal error: non-float dtype {}", o->dtype());
    }
  });
}

}  // namespace

void register_layer_norm_ops() {
  register_op(OpId::LayerNorm, {"layer_norm", layer_norm_meta, layer_norm_eager, kNoFlags});
}

Tensor layer_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  Attrs a;
  a.dims = normalized_shape.dims();
  a.scalars[0] = eps;
  a.ints[0] = weight.defined();
  a.ints[1] = bias.defined();
  Tensor in[3] = {x};
  size_t n = 1;
  if (weight.defined()) in[n++] = weight;
  if (bias.defined()) in[n++] = bias;
  return dispatch(OpId::LayerNorm, std::span<const Tensor>(in, n), a);
}

}  // namespace kiln
