// Copy (into any layout, casting), Cast (to another dtype) and Fill, plus contiguous/clone/to.
// Attrs: Cast uses attrs.dtype; Fill uses attrs.dims (shape), attrs.scalars[0] (value),
// attrs.dtype and attrs.device.
#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/pointwise_table.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "runtime/autograd/device_move.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/device_copy.h"

namespace kiln {

namespace {

void copy_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  m.sizes = x->sizes();
  m.dtype = c.op == OpId::Cast ? c.attrs.dtype : x->dtype();
  m.device = x->device();
}

void copy_eager(const OpCall& c, const Tensor& out) {
  // The indices are computed before a table is chosen, never as `(cond ? A : B)[p->f()]`: GCC 12
  // with -fsanitize=undefined miscompiles that form when p's class is polymorphic (the arm
  // evaluated second reads a `this` temporary only the first arm sets; docs/testing.md,
  // "Sanitizers", and tests/sanitizers/gcc12_cond_subscript.cpp).
  const int from = int(c.inputs[0].impl()->dtype());
  const int to = int(out.impl()->dtype());
  // A large contiguous destination is written with non-temporal stores (the cast_nt loops).
  const PointwiseTable& t = pointwise_table();
  ElementwiseLoop loop(out, c.inputs);
  if (from == to && loop.run_transposed_copy(itemsize(out.impl()->dtype()))) return;
  const InnerLoop fn =
      streams_output(out.impl()) && !loop.tiles() ? t.cast_nt[from][to] : t.cast[from][to];
  loop.run(fn, nullptr);
}

void fill_meta(const OpCall& c, OutputMeta& m) {
  for (int64_t s : c.attrs.dims)
    KILN_CHECK(s >= 0, "full: negative size {} in shape {}", s, shape_str(c.attrs.dims));
  m.sizes = c.attrs.dims;
  m.dtype = c.attrs.dtype;
  m.device = c.attrs.device;
  check_scalar_fits("full", "fill value", c.attrs.scalars[0], m.dtype);
  check_device_available("full", m.device);
}

void fill_eager(const OpCall& c, const Tensor& out) {
  ElementwiseLoop loop(out, {});
  loop.run(pointwise_table().fill[int(out.impl()->dtype())], c.attrs.scalars.data());
}

}  // namespace

void register_copy_ops() {
  register_op(OpId::Copy, {"copy", copy_meta, copy_eager, kWritesAnyLayout});
  register_op(OpId::Cast, {"to", copy_meta, copy_eager, kWritesAnyLayout});
  register_op(OpId::Fill, {"full", fill_meta, fill_eager, kWritesAnyLayout});
}

Tensor Tensor::contiguous() const {
  if (checked("contiguous").is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  const Tensor in[] = {*this};
  return dispatch(OpId::Copy, in, Attrs{});
}

Tensor Tensor::to(DType t) const {
  if (checked("to").dtype() == t) return *this;
  Attrs a;
  a.dtype = t;
  const Tensor in[] = {*this};
  return dispatch(OpId::Cast, in, a);
}

Tensor Tensor::to(Device d) const {
  const TensorImpl& x = checked("to");
  if (x.device() == d) return *this;
  check_device_available("to", x.device());
  check_device_available("to", d);
  // Recorded by autograd as one node whose backward moves the gradient back (the dense copy
  // below is an implementation detail, kept out of the graph).
  const bool record = x.requires_grad() && GradMode::is_enabled();
  Tensor out;
  {
    NoGradGuard no_grad;
    // Views and strided tensors are made dense on their own device first, so the transfer is
    // one block of bytes.
    const Tensor src = contiguous();
    out = empty_tensor(x.sizes(), x.dtype(), d);
    copy_bytes(d, out.impl()->data(), x.device(), src.impl()->data(),
               static_cast<size_t>(x.numel()) * itemsize(x.dtype()));
  }
  if (record) record_device_move(*this, out);
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  KILN_CHECK(src.defined(), "copy_: the source tensor is undefined");
  const DimVector& dst = checked("copy_").sizes();
  DimVector b = broadcast_shapes("copy_", src.impl()->sizes(), dst);
  KILN_CHECK(b == dst,
             "copy_: the source of shape {} does not broadcast to the "
             "destination's shape {}",
             shape_str(src.impl()->sizes()), shape_str(dst));
  // A source on another device is moved to this one first (copy_ is how libtorch code fills a
  // device tensor from the host).
  Tensor s = src.device() == device() ? src : src.to(device());
  if (s.impl()->sizes() != dst) s = s.expand(dst);
  const Tensor in[] = {s};
  dispatch_into(OpId::Copy, in, Attrs{}, *this);
  return *this;
}

Tensor& Tensor::fill_(const Scalar& v) {
  const TensorImpl& self = checked("fill_");
  Attrs a;
  a.dims = self.sizes();
  a.scalars[0] = v;
  a.dtype = self.dtype();
  a.device = self.device();
  dispatch_into(OpId::Fill, {}, a, *this);
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace kiln
