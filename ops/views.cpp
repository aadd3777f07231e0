// View ops: outputs alias input 0's storage (PyTorch semantics). The meta function computes the
// view's geometry; the dispatcher's eager handler wraps it around the input's storage.
// Attrs: View/Expand: dims = target shape; Permute: dims = permutation; Slice: ints = {dim, start,
// end, step}; Select: ints = {dim, index}; Unsqueeze: ints[0] = dim; Squeeze: ints[0] = dim,
// ints[1] = 1 to squeeze every size-1 dim.
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"

namespace kiln {

namespace {

void base_meta(const TensorImpl* x, OutputMeta& m) {
  m.dtype = x->dtype();
  m.device = x->device();
  m.offset = x->offset();
}

// Strides for viewing (sizes, strides) as `shape`, or false when the memory layout does not
// allow it without a copy (PyTorch's computeStride).
bool view_strides(const DimVector& sizes, const DimVector& strides, const DimVector& shape,
                  DimVector& out) {
  out.assign(shape.size(), 0);
  int64_t numel = numel_of(sizes);
  // Nothing to preserve: an empty tensor, or a 0-dim one (whose target shape is all ones).
  if (numel == 0 || sizes.empty()) {
    out = contiguous_strides(shape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

// Replaces one -1 in `shape` by the size that keeps numel, checking the total.
DimVector infer_shape(const char* op, IntList shape, int64_t numel, const DimVector& from) {
  DimVector out = shape.dims();
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(infer < 0, "{}: only one dimension can be -1 in shape {}", op, shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      KILN_CHECK(out[i] >= 0, "{}: invalid size {} in shape {}", op, out[i], shape_str(shape));
      known *= out[i];
    }
  }
  if (infer >= 0) {
    KILN_CHECK(known != 0 && numel % known == 0,
               "{}: shape {} is invalid for an input of shape {} ({} elements)", op,
               shape_str(shape), shape_str(from), numel);
    out[infer] = numel / known;
  } else {
    KILN_CHECK(known == numel, "{}: shape {} is invalid for an input of shape {} ({} elements)", op,
               shape_str(shape), shape_str(from), numel);
  }
  return out;
}

void view_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  base_meta(x, m);
  m.sizes = infer_shape("view", c.attrs.dims, x->numel(), x->sizes());
  KILN_CHECK(view_strides(x->sizes(), x->strides(), m.sizes, m.strides),
             "view: shape {} is not compatible with the input's size {} and stride {} (at least "
             "one dimension spans two contiguous subspaces); use reshape() instead",
             shape_str(m.sizes), shape_str(x->sizes()), shape_str(x->strides()));
}

void expand_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  base_meta(x, m);
  const DimVector& want = c.attrs.dims;
  int64_t nd = static_cast<int64_t>(want.size()), xd = x->dim();
  KILN_CHECK(nd >= xd, "expand: the target shape {} has fewer dims than the input's shape {}",
             shape_str(want), shape_str(x->sizes()));
  m.sizes.resize(nd);
  m.strides.resize(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t xi = i - (nd - xd);
    int64_t size = xi >= 0 ? x->sizes()[xi] : 1;
    int64_t stride = xi >= 0 ? x->strides()[xi] : 0;
    int64_t target = want[i];
    KILN_CHECK(target >= -1, "expand: invalid size {} in the target shape {}", target,
               shape_str(want));
    if (target == -1) {
      KILN_CHECK(xi >= 0, "expand: -1 is not allowed for a new leading dim (target shape {})",
                 shape_str(want));
      target = size;
    }
    KILN_CHECK(size == target || size == 1,
               "expand: the input's shape {} cannot be expanded to {} (dim {}: {} vs {})",
               shape_str(x->sizes()), shape_str(want), i, size, target);
    m.sizes[i] = target;
    m.strides[i] = size == target ? stride : 0;
  }
}

void permute_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  base_meta(x, m);
  const DimVector& perm = c.attrs.dims;
  KILN_CHECK(static_cast<int64_t>(perm.size()) == x->dim(),
             "permute: the permutation {} must list all {} dims of the input {}", shape_str(perm),
             x->dim(), describe(c.inputs[0]));
  uint64_t seen = dims_mask("permute", perm, x->dim());
  (void)seen;
  m.sizes.resize(perm.size());
  m.strides.resize(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t d = wrap_dim("permute", perm[i], x->dim());
    m.sizes[i] = x->sizes()[d];
    m.strides[i] = x->strides()[d];
  }
}

void slice_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  base_meta(x, m);
  KILN_CHECK(x->dim() > 0, "slice: cannot slice a 0-dim tensor");
  int64_t dim = wrap_dim("slice", c.attrs.ints[0], x->dim());
  int64_t size = x->sizes()[dim];
  int64_t start = c.attrs.ints[1], end = c.attrs.ints[2], step = c.attrs.ints[3];
  KILN_CHECK(step > 0, "slice: step must be positive, got {}", step);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  m.sizes = x->sizes();
  m.strides = x->strides();
  m.sizes[dim] = end == start ? 0 : (end - start - 1) / step + 1;  // no overflow for a huge step
  // A huge step leaves at most one element, whose stride is never used: keep it finite.
  if (__builtin_mul_overflow(x->strides()[dim], step, &m.strides[dim]))
    m.strides[dim] = x->strides()[dim];
  m.offset = x->offset() + start * x->strides()[dim];
}

void select_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  base_meta(x, m);
  KILN_CHECK(x->dim() > 0, "select: cannot select from a 0-dim tensor");
  int64_t dim = wrap_dim("select", c.attrs.ints[0], x->dim());
  int64_t size = x->sizes()[dim], index = c.attrs.ints[1];
  KILN_CHECK(index >= -size && index < size,
             "select: index {} is out of range for dim {} of size {} (input {})", index, dim, size,
             describe(c.inputs[0]));
  if (index < 0) index += size;
  m.sizes = x->sizes();
  m.strides = x->strides();
  m.offset = x->offset() + index * x->strides()[dim];
  m.sizes.erase(dim);
  m.strides.erase(dim);
}

void unsqueeze_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  base_meta(x, m);
  int64_t dim = wrap_dim("unsqueeze", c.attrs.ints[0], x->dim() + 1);
  m.sizes = x->sizes();
  m.strides = x->strides();
  int64_t stride = dim < x->dim() ? x->sizes()[dim] * x->strides()[dim] : 1;
  m.sizes.insert(dim, 1);
  m.strides.insert(dim, stride);
}

void squeeze_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  base_meta(x, m);
  bool every = c.attrs.ints[1] != 0;
  int64_t dim = every ? -1 : wrap_dim("squeeze", c.attrs.ints[0], x->dim());
  for (int64_t d = 0; d < x->dim(); ++d) {
    bool drop = x->sizes()[d] == 1 && (every || d == dim);
    if (drop) continue;
    m.sizes.push_back(x->sizes()[d]);
    m.strides.push_back(x->strides()[d]);
  }
}

Tensor view_op(OpId id, const Tensor& x, const Attrs& a) {
  const Tensor in[] = {x};
  return dispatch(id, in, a);
}

}  // namespace

void register_view_ops() {
  register_op(OpId::View, {"view", view_meta, nullptr, kIsView});
  register_op(OpId::Expand, {"expand", expand_meta, nullptr, kIsView});
  register_op(OpId::Permute, {"permute", permute_meta, nullptr, kIsView});
  register_op(OpId::Slice, {"slice", slice_meta, nullptr, kIsView});
  register_op(OpId::Select, {"select", select_meta, nullptr, kIsView});
  register_op(OpId::Unsqueeze, {"unsqueeze", unsqueeze_meta, nullptr, kIsView});
  register_op(OpId::Squeeze, {"squeeze", squeeze_meta, nullptr, kIsView});
}

Tensor Tensor::view(IntList shape) const {
  Attrs a;
  a.dims = shape.dims();
  return view_op(OpId::View, *this, a);
}

Tensor Tensor::reshape(IntList shape) const {
  const TensorImpl& x = checked("reshape");
  DimVector target = infer_shape("reshape", shape, x.numel(), x.sizes());
  DimVector st;
  if (view_strides(x.sizes(), x.strides(), target, st)) return view(target);
  return contiguous().view(target);
}

Tensor Tensor::expand(IntList shape) const {
  Attrs a;
  a.dims = shape.dims();
  return view_op(OpId::Expand, *this, a);
}

Tensor Tensor::expand_as(const Tensor& o) const {
  KILN_CHECK(o.defined(), "expand_as: the tensor to expand as is undefined");
  return expand(o.impl()->sizes());
}

Tensor Tensor::permute(IntList dims) const {
  Attrs a;
  a.dims = dims.dims();
  return view_op(OpId::Permute, *this, a);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  int64_t nd = checked("transpose").dim();
  if (nd == 0) {
    wrap_dim("transpose", d0, 0);
    wrap_dim("transpose", d1, 0);
    return *this;
  }
  int64_t a = wrap_dim("transpose", d0, nd), b = wrap_dim("transpose", d1, nd);
  DimVector perm(nd);
  for (int64_t i = 0; i < nd; ++i) perm[i] = i;
  std::swap(perm[a], perm[b]);
  return permute(perm);
}

Tensor Tensor::t() const {
  int64_t nd = checked("t").dim();
  KILN_CHECK(nd <= 2, "t: expects a tensor of at most 2 dims, got {}; use transpose()",
             describe(*this));
  return nd < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  Attrs a;
  a.ints[0] = d;
  return view_op(OpId::Unsqueeze, *this, a);
}

Tensor Tensor::squeeze(int64_t d) const {
  Attrs a;
  a.ints[0] = d;
  return view_op(OpId::Squeeze, *this, a);
}

Tensor Tensor::squeeze() const {
  Attrs a;
  a.ints[1] = 1;
  return view_op(OpId::Squeeze, *this, a);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  const TensorImpl& x = checked("flatten");
  if (x.dim() == 0) return reshape({1});
  int64_t s = wrap_dim("flatten", start, x.dim()), e = wrap_dim("flatten", end, x.dim());
  KILN_CHECK(s <= e, "flatten: start dim {} must not come after end dim {}", start, end);
  DimVector shape;
  for (int64_t d = 0; d < s; ++d) shape.push_back(x.sizes()[d]);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= x.sizes()[d];
  shape.push_back(merged);
  for (int64_t d = e + 1; d < x.dim(); ++d) shape.push_back(x.sizes()[d]);
  return reshape(shape);
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  Attrs a;
  a.ints = {dim, start, end, step};
  return view_op(OpId::Slice, *this, a);
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  Attrs a;
  a.ints[0] = dim;
  a.ints[1] = index;
  return view_op(OpId::Select, *this, a);
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  const TensorImpl& x = checked("narrow");
  KILN_CHECK(x.dim() > 0, "narrow: cannot narrow a 0-dim tensor");
  int64_t d = wrap_dim("narrow", dim, x.dim());
  int64_t size = x.sizes()[d];
  if (start < 0) start += size;
  KILN_CHECK(start >= 0 && start <= size && length >= 0 && length <= size - start,
             "narrow: start {} and length {} are out of range for dim {} of size {}", start, length,
             d, size);
  return slice(d, start, start + length, 1);
}

Tensor Tensor::operator[](int64_t i) const { return select(0, i); }

}  // namespace kiln
