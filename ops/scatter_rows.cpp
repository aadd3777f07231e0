// scatter_add into zeros of one value per line, as two per-line tensors that a select turns into
// the result (the CPU JIT's rewrite: jit/passes/scatter_select.h). For out of shape [..., C]
// (attrs.dims, the fill's shape), an index and a source of size 1 along the last dim and at most
// out's sizes along the others (scatter_add's own meta checks them when it is recorded):
// - ScatterRowIndex {index}: per line of out ([..., 1], attrs.dtype Int32 or Int64), the class
//   index[line] where the index covers the line, -1 elsewhere; an index out of [0, C) raises
//   scatter_add's error (kChecksData).
// - ScatterRowValue {src, index}: per line of out ([..., 1], src's dtype), 0 + src[line] where
//   the index covers the line (the fill's 0 plus the one element added: eager's bits, -0 to +0),
//   0 elsewhere.
// A line of out is covered where each of its coordinates lies within the index's size.
#include <algorithm>

#include "ops/functions.h"
#include "ops/index_common.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"

namespace kiln {

namespace {

DimVector line_sizes(const Attrs& a) {
  DimVector s = a.dims;
  if (!s.empty()) s.back() = 1;
  return s;
}

// Calls f(line, offset of index, offset of src) for each covered line of out (element offsets).
template <class F>
void for_covered_lines(const DimVector& out, const TensorImpl* index, const TensorImpl* src,
                       const F& f) {
  const size_t kept = out.empty() ? 0 : out.size() - 1;
  DimVector at(kept, 0);
  int64_t lines = 1;
  for (size_t d = 0; d < kept; ++d) lines *= out[d];
  for (int64_t line = 0; line < lines; ++line) {
    bool covered = true;
    int64_t oi = 0, os = 0;
    for (size_t d = 0; d < kept; ++d) {
      covered = covered && at[d] < index->sizes()[d];
      oi += at[d] * index->strides()[d];
      if (src != nullptr) os += at[d] * src->strides()[d];
    }
    if (covered) f(line, oi, os);
    for (size_t d = kept; d-- > 0;) {
      if (++at[d] < out[d]) break;
      at[d] = 0;
    }
  }
}

void row_index_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* ii = c.inputs[0].impl();
  KILN_CHECK(ii->dtype() == DType::Int64 || ii->dtype() == DType::Int32,
             "scatter_row_index: expected an Int64 or Int32 index, got {}", describe(c.inputs[0]));
  KILN_CHECK(!c.attrs.dims.empty() && ii->dim() == static_cast<int64_t>(c.attrs.dims.size()),
             "scatter_row_index: the index {} must have the rank of the output {}",
             describe(c.inputs[0]), shape_str(c.attrs.dims));
  m.device = ii->device();
  m.dtype = c.attrs.dtype == DType::Int32 ? DType::Int32 : DType::Int64;
  m.sizes = line_sizes(c.attrs);
}

// K: the class dtype (out), I: the index's.
template <class K, class I>
void fill_row_index(const Tensor& out, const TensorImpl* index, const DimVector& dims) {
  const int64_t classes = dims.back(), dim = static_cast<int64_t>(dims.size()) - 1;
  const I* ix = static_cast<const I*>(index->data());
  K* o = static_cast<K*>(out.impl()->data());
  std::fill(o, o + out.numel(), K{-1});
  for_covered_lines(dims, index, nullptr, [&](int64_t line, int64_t oi, int64_t) {
    const int64_t v = ix[oi];
    if (v < 0 || v >= classes) fail_index("scatter_add", v, dim, classes);
    o[line] = static_cast<K>(v);
  });
}

void row_index_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl* ii = c.inputs[0].impl();
  const bool k32 = out.impl()->dtype() == DType::Int32, i32 = ii->dtype() == DType::Int32;
  if (k32)
    i32 ? fill_row_index<int32_t, int32_t>(out, ii, c.attrs.dims)
        : fill_row_index<int32_t, int64_t>(out, ii, c.attrs.dims);
  else
    i32 ? fill_row_index<int64_t, int32_t>(out, ii, c.attrs.dims)
        : fill_row_index<int64_t, int64_t>(out, ii, c.attrs.dims);
}

void row_value_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* si = c.inputs[0].impl();
  const TensorImpl* ii = c.inputs[1].impl();
  KILN_CHECK(!c.attrs.dims.empty() && ii->dim() == static_cast<int64_t>(c.attrs.dims.size()) &&
                 si->dim() == ii->dim(),
             "scatter_row_value: the source {} and index {} must have the rank of the output {}",
             describe(c.inputs[0]), describe(c.inputs[1]), shape_str(c.attrs.dims));
  m.device = si->device();
  m.dtype = si->dtype();
  m.sizes = line_sizes(c.attrs);
}

void row_value_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl* si = c.inputs[0].impl();
  const TensorImpl* ii = c.inputs[1].impl();
  visit_dtype(si->dtype(), [&]<class T>(TypeTag<T>) {
    T* o = static_cast<T*>(out.impl()->data());
    const T* s = static_cast<const T*>(si->data());
    std::fill(o, o + out.numel(), T{});
    for_covered_lines(c.attrs.dims, ii, si, [&](int64_t line, int64_t, int64_t os) {
      if constexpr (std::is_floating_point_v<T>)
        o[line] = T(0) + s[os];
      else
        o[line] = s[os];
    });
  });
}

}  // namespace

void register_scatter_row_ops() {
  register_op(OpId::ScatterRowIndex,
              {"scatter_row_index", row_index_meta, row_index_eager, kChecksData});
  register_op(OpId::ScatterRowValue,
              {"scatter_row_value", row_value_meta, row_value_eager, kNoFlags});
}

}  // namespace kiln
