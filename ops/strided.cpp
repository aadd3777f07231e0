// AsStrided: a view of input 0's storage with the geometry in the attrs (offset absolute in the
// storage, in elements). AsStridedScatter(base, src): a fresh row-major copy of `base` in which
// the elements that the geometry selects (offset relative to base's first element) are
// replaced by `src` (cast to base's dtype) — the functional form of `view.copy_(src)`.
#include "ops/strided.h"

#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln {

namespace {

struct Geometry {
  DimVector sizes, strides;
  int64_t offset;
};

Geometry geometry_of(const char* op, const Attrs& a) {
  KILN_CHECK(a.dims.size() % 2 == 0, "{}: the attrs hold {} numbers, expected sizes then strides",
             op, a.dims.size());
  const size_t rank = a.dims.size() / 2;
  Geometry g{DimVector(a.dims.begin(), a.dims.begin() + rank),
             DimVector(a.dims.begin() + rank, a.dims.end()), a.ints[0]};
  for (size_t d = 0; d < rank; ++d) {
    KILN_CHECK(g.sizes[d] >= 0 && g.strides[d] >= 0,
               "{}: negative size or stride in sizes {} strides {}", op, shape_str(g.sizes),
               shape_str(g.strides));
  }
  KILN_CHECK(g.offset >= 0, "{}: negative storage offset {}", op, g.offset);
  return g;
}

// Index one past the last element the geometry reaches (0 for an empty one).
int64_t extent(const Geometry& g) {
  int64_t last = g.offset;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    if (g.sizes[d] == 0) return 0;
    last += (g.sizes[d] - 1) * g.strides[d];
  }
  return last + 1;
}

void as_strided_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  Geometry g = geometry_of("as_strided", c.attrs);
  const int64_t available = static_cast<int64_t>(x->storage()->nbytes() / itemsize(x->dtype()));
  KILN_CHECK(extent(g) <= available,
             "as_strided: sizes {} strides {} offset {} reach element {} of a storage of {} {} "
             "elements",
             shape_str(g.sizes), shape_str(g.strides), g.offset, extent(g) - 1, available,
             x->dtype());
  m.sizes = g.sizes;
  m.strides = g.strides;
  m.offset = g.offset;
  m.dtype = x->dtype();
  m.device = x->device();
}

void as_strided_scatter_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* base = c.inputs[0].impl();
  const TensorImpl* src = c.inputs[1].impl();
  Geometry g = geometry_of("as_strided_scatter", c.attrs);
  KILN_CHECK(extent(g) <= base->numel(),
             "as_strided_scatter: sizes {} strides {} offset {} reach element {} of a base of {} "
             "elements ({})",
             shape_str(g.sizes), shape_str(g.strides), g.offset, extent(g) - 1, base->numel(),
             describe(c.inputs[0]));
  KILN_CHECK(src->sizes() == g.sizes, "as_strided_scatter: the source {} does not have shape {}",
             describe(c.inputs[1]), shape_str(g.sizes));
  KILN_CHECK(src->device() == base->device(),
             "as_strided_scatter: the source is on {} but the base is on {}", src->device(),
             base->device());
  m.sizes = base->sizes();
  m.dtype = base->dtype();
  m.device = base->device();
}

void as_strided_scatter_eager(const OpCall& c, const Tensor& out) {
  const OpDef& copy = op_def(OpId::Copy);
  Attrs none;
  const Tensor base[] = {c.inputs[0]};
  copy.eager(OpCall{OpId::Copy, base, none}, out);
  Geometry g = geometry_of("as_strided_scatter", c.attrs);
  if (numel_of(g.sizes) == 0) return;
  const TensorImpl* o = out.impl();
  Tensor view(make_ref<TensorImpl>(g.sizes, g.strides, o->offset() + g.offset, o->dtype(),
                                   o->device(), o->storage_ref()));
  const Tensor src[] = {c.inputs[1]};
  copy.eager(OpCall{OpId::Copy, src, none}, view);
}

}  // namespace

Attrs strided_attrs(const DimVector& sizes, const DimVector& strides, int64_t offset) {
  Attrs a;
  a.dims = sizes;
  for (int64_t s : strides) a.dims.push_back(s);
  a.ints[0] = offset;
  return a;
}

void register_strided_ops() {
  register_op(OpId::AsStrided, {"as_strided", as_strided_meta, nullptr, kIsView});
  register_op(OpId::AsStridedScatter,
              {"as_strided_scatter", as_strided_scatter_meta, as_strided_scatter_eager, kNoFlags});
}

}  // namespace kiln
