// Indexing along one dim: index_select, gather and scatter_add (out of place), as in PyTorch.
// Attrs: all three use ints[0] = dim (as the user gave it; the meta function wraps it).
// Inputs: IndexSelect {x, index}, Gather {x, index}, ScatterAdd {x, index, src}.
//
// The kernels use PyTorch's restriding trick: they walk the index space with the indexed tensor's
// stride along `dim` set to 0, and add index * stride(dim) per element, so one strided walk
// serves every layout. Index values are checked in the kernel (the meta function cannot see
// them); a bad one raises after the parallel loop.
#include <algorithm>
#include <type_traits>

#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/pointwise_table.h"
#include "ops/cpu/strided_rows.h"
#include "ops/functions.h"
#include "ops/index_common.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "runtime/parallel.h"

namespace kiln {

void register_one_hot_op();       // ops/one_hot.cpp
void register_scatter_row_ops();  // ops/scatter_rows.cpp
void register_triangle_ops();     // ops/triangle.cpp

namespace {

// ---- meta functions ----

void check_index_dtype(const char* op, const Tensor& index) {
  DType dt = index.impl()->dtype();
  KILN_CHECK(dt == DType::Int64 || dt == DType::Int32,
             "{}: expected an Int64 or Int32 index, got {}", op, describe(index));
}

void index_select_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& x = c.inputs[0];
  const Tensor& index = c.inputs[1];
  const TensorImpl* xi = x.impl();
  const TensorImpl* ii = index.impl();
  m.device = common_device("index_select", c.inputs);
  int64_t dim = wrap_dim("index_select", c.attrs.ints[0], xi->dim());
  check_index_dtype("index_select", index);
  KILN_CHECK(ii->dim() <= 1, "index_select: the index must be a vector (at most 1-D), got {}",
             describe(index));
  KILN_CHECK(xi->dim() > 0 || ii->numel() == 1,
             "index_select: an index into a 0-dim tensor must have exactly 1 value, got {}",
             describe(index));
  m.dtype = xi->dtype();
  m.sizes = xi->sizes();
  if (xi->dim() > 0) m.sizes[dim] = ii->numel();
}

void gather_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& x = c.inputs[0];
  const Tensor& index = c.inputs[1];
  const TensorImpl* xi = x.impl();
  const TensorImpl* ii = index.impl();
  m.device = common_device("gather", c.inputs);
  int64_t dim = wrap_dim("gather", c.attrs.ints[0], xi->dim());
  m.dtype = xi->dtype();
  m.sizes = ii->sizes();
  if (ii->numel() == 0) return;  // nothing is read (PyTorch skips these checks too)
  check_index_dtype("gather", index);
  DimVector xs = nonempty_sizes(xi), is = nonempty_sizes(ii);
  KILN_CHECK(xs.size() == is.size(),
             "gather: the index {} must have the same number of dims as the input {}",
             describe(index), describe(x));
  for (size_t d = 0; d < xs.size(); ++d) {
    KILN_CHECK(int64_t(d) == dim || is[d] <= xs[d],
               "gather: the index {} must not be larger than the input {} except in dim {} (dim "
               "{}: {} > {})",
               describe(index), describe(x), dim, d, is[d], xs[d]);
  }
}

void scatter_add_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& x = c.inputs[0];
  const Tensor& index = c.inputs[1];
  const Tensor& src = c.inputs[2];
  const TensorImpl* xi = x.impl();
  const TensorImpl* ii = index.impl();
  const TensorImpl* si = src.impl();
  m.device = common_device("scatter_add", c.inputs);
  int64_t dim = wrap_dim("scatter_add", c.attrs.ints[0], xi->dim());
  KILN_CHECK(si->dtype() == xi->dtype(),
             "scatter_add: expected the source {} to have the input's dtype ({})", describe(src),
             describe(x));
  m.dtype = xi->dtype();
  m.sizes = xi->sizes();
  if (ii->numel() == 0) return;  // nothing is read (PyTorch skips these checks too)
  check_index_dtype("scatter_add", index);
  DimVector xs = nonempty_sizes(xi), is = nonempty_sizes(ii), ss = nonempty_sizes(si);
  KILN_CHECK(xs.size() == is.size() && ss.size() == is.size(),
             "scatter_add: the input {}, index {} and source {} must have the same number of dims",
             describe(x), describe(index), describe(src));
  for (size_t d = 0; d < xs.size(); ++d) {
    KILN_CHECK(int64_t(d) == dim || is[d] <= xs[d],
               "scatter_add: the index {} must not be larger than the input {} except in dim {} "
               "(dim {}: {} > {})",
               describe(index), describe(x), dim, d, is[d], xs[d]);
    KILN_CHECK(is[d] <= ss[d],
               "scatter_add: the index {} must not be larger than the source {} (dim {}: {} > {})",
               describe(index), describe(src), d, is[d], ss[d]);
  }
}

// ---- gather-like kernel (index_select and gather) ----

// The walk for out[p] = x[p with dim replaced by index[p]]: operands out, x (restrided) and
// index, over the output's index space.
struct GatherPlan {
  DimVector sizes;
  std::array<DimVector, 3> strides;
  int64_t dim = 0, dim_size = 0, dim_stride = 0;
};

template <class T, class I>
void run_gather(const char* op, const GatherPlan& plan, const Tensor& out, const Tensor& x,
                const Tensor& index) {
  StridedRows<3> rows(plan.sizes, plan.strides);
  T* o = static_cast<T*>(out.impl()->data());
  const T* xs = static_cast<const T*>(x.impl()->data());
  const I* ix = static_cast<const I*>(index.impl()->data());
  const int64_t so = rows.inner_stride(0), sx = rows.inner_stride(1), si = rows.inner_stride(2);
  const int64_t size = plan.dim_size, stride = plan.dim_stride;
  BadIndex bad;
  parallel_for(0, rows.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
    rows.for_range(b, e, [&](const StridedRows<3>::Offsets& off, int64_t n) {
      if (bad.seen()) return;
      T* op_ = o + off[0];
      const T* xp = xs + off[1];
      const I* ip = ix + off[2];
      if (si == 0) {  // one index for the whole run (index_select rows, expanded indices)
        const int64_t v = ip[0];
        if (v < 0 || v >= size) return bad.record(v);
        const T* src = xp + v * stride;
        if (so == 1 && sx == 1) {
          std::copy_n(src, n, op_);
        } else {
          for (int64_t i = 0; i < n; ++i) op_[i * so] = src[i * sx];
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = ip[i * si];
        if (v < 0 || v >= size) return bad.record(v);
        op_[i * so] = xp[i * sx + v * stride];
      }
    });
  });
  if (bad.seen()) fail_index(op, bad.value(), plan.dim, size);
}

void gather_dispatch(const char* op, const GatherPlan& plan, const Tensor& out, const Tensor& x,
                     const Tensor& index) {
  visit_dtype(x.impl()->dtype(), [&]<class T>(TypeTag<T>) {
    if (index.impl()->dtype() == DType::Int32)
      run_gather<T, int32_t>(op, plan, out, x, index);
    else
      run_gather<T, int64_t>(op, plan, out, x, index);
  });
}

void index_select_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl* xi = c.inputs[0].impl();
  const TensorImpl* ii = c.inputs[1].impl();
  GatherPlan p;
  p.dim = wrap_dim("index_select", c.attrs.ints[0], xi->dim());
  DimVector xstrides = nonempty_strides(xi);
  p.sizes = nonempty_sizes(xi);
  p.dim_size = p.sizes[p.dim];
  p.dim_stride = xstrides[p.dim];
  p.sizes[p.dim] = ii->numel();
  p.strides[0] = contiguous_strides(p.sizes);
  p.strides[1] = xstrides;
  p.strides[1][p.dim] = 0;
  p.strides[2].assign(p.sizes.size(), 0);
  p.strides[2][p.dim] = ii->dim() == 0 ? 0 : ii->strides()[0];
  gather_dispatch("index_select", p, out, c.inputs[0], c.inputs[1]);
}

void gather_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl* xi = c.inputs[0].impl();
  const TensorImpl* ii = c.inputs[1].impl();
  GatherPlan p;
  p.dim = wrap_dim("gather", c.attrs.ints[0], xi->dim());
  DimVector xstrides = nonempty_strides(xi);
  p.dim_size = nonempty_sizes(xi)[p.dim];
  p.dim_stride = xstrides[p.dim];
  p.sizes = nonempty_sizes(ii);
  p.strides[0] = contiguous_strides(p.sizes);
  p.strides[1] = xstrides;
  p.strides[1][p.dim] = 0;
  p.strides[2] = nonempty_strides(ii);
  gather_dispatch("gather", p, out, c.inputs[0], c.inputs[1]);
}

// ---- scatter_add ----

// out = x, then out[p with dim replaced by index[p]] += src[p] for every p of the index space.
// Two index elements can only hit one output element when they differ in `dim` alone, so work
// is split over the other coordinates and each piece walks `dim` in ascending order: every
// output element receives its additions in the sequential row-major order, on any thread count.
template <class T, class I>
void run_scatter_add(int64_t dim, const Tensor& out, const Tensor& index, const Tensor& src) {
  const TensorImpl* oi = out.impl();
  const TensorImpl* ii = index.impl();
  const TensorImpl* si = src.impl();
  DimVector sizes = nonempty_sizes(ii);
  DimVector ostrides = contiguous_strides(nonempty_sizes(oi));
  const int64_t size = nonempty_sizes(oi)[dim], stride = ostrides[dim];
  std::array<DimVector, 3> strides{ostrides, nonempty_strides(si), nonempty_strides(ii)};
  strides[0][dim] = 0;
  StridedRows<3> rows(sizes, strides);

  T* o = static_cast<T*>(oi->data());
  const T* s = static_cast<const T*>(si->data());
  const I* ix = static_cast<const I*>(ii->data());
  const int64_t so = rows.inner_stride(0), ss = rows.inner_stride(1), sx = rows.inner_stride(2);
  BadIndex bad;
  auto body = [&](const StridedRows<3>::Offsets& off, int64_t n) {
    if (bad.seen()) return;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = ix[off[2] + i * sx];
      if (v < 0 || v >= size) return bad.record(v);
      T& dst = o[off[0] + i * so + v * stride];
      const T add = s[off[1] + i * ss];
      if constexpr (std::is_same_v<T, bool>) {
        dst = dst || add;
      } else if constexpr (std::is_integral_v<T>) {  // wraps like PyTorch, without signed UB
        using U = std::make_unsigned_t<T>;
        dst = static_cast<T>(static_cast<U>(dst) + static_cast<U>(add));
      } else {
        dst += add;
      }
    }
  };

  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[d];
  for (size_t d = dim + 1; d < sizes.size(); ++d) inner *= sizes[d];
  const int64_t n = sizes[dim];
  // Inner chunks long enough to amortize locating a run, short enough to feed 16 threads.
  const int64_t kInnerChunk = std::clamp<int64_t>(inner / 16, 256, 4096);
  if (inner < 2 * kInnerChunk || outer >= 64) {
    // Whole blocks of the dims before `dim` per task: plain sequential order inside.
    const int64_t block = n * inner;
    parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(block, 1)),
                 [&](int64_t b, int64_t e) { rows.for_range(b * block, e * block, body); });
  } else {
    // Few outer blocks but long inner rows: split the inner coordinates too.
    const int64_t chunks = (inner + kInnerChunk - 1) / kInnerChunk;
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / (n * kInnerChunk));
    parallel_for(0, outer * chunks, grain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t ob = t / chunks, lo = (t % chunks) * kInnerChunk;
        const int64_t hi = std::min(inner, lo + kInnerChunk);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t row = (ob * n + j) * inner;
          rows.for_range(row + lo, row + hi, body);
        }
      }
    });
  }
  if (bad.seen()) fail_index("scatter_add", bad.value(), dim, size);
}

void scatter_add_eager(const OpCall& c, const Tensor& out) {
  const Tensor& x = c.inputs[0];
  const Tensor in[] = {x};
  ElementwiseLoop copy(out, in);
  DType dt = x.impl()->dtype();
  copy.run(pointwise_table().cast[int(dt)][int(dt)], nullptr);
  if (c.inputs[1].impl()->numel() == 0) return;
  int64_t dim = wrap_dim("scatter_add", c.attrs.ints[0], x.impl()->dim());
  visit_dtype(dt, [&]<class T>(TypeTag<T>) {
    if (c.inputs[1].impl()->dtype() == DType::Int32)
      run_scatter_add<T, int32_t>(dim, out, c.inputs[1], c.inputs[2]);
    else
      run_scatter_add<T, int64_t>(dim, out, c.inputs[1], c.inputs[2]);
  });
}

}  // namespace

void register_index_ops() {
  register_op(OpId::IndexSelect,
              {"index_select", index_select_meta, index_select_eager, kChecksData});
  register_op(OpId::Gather, {"gather", gather_meta, gather_eager, kChecksData});
  register_op(OpId::ScatterAdd, {"scatter_add", scatter_add_meta, scatter_add_eager, kChecksData});
  register_one_hot_op();
  register_scatter_row_ops();
  register_triangle_ops();
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  Attrs a;
  a.ints[0] = dim;
  const Tensor in[] = {x, index};
  return dispatch(OpId::IndexSelect, in, a);
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Attrs a;
  a.ints[0] = dim;
  const Tensor in[] = {x, index};
  return dispatch(OpId::Gather, in, a);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Attrs a;
  a.ints[0] = dim;
  const Tensor in[] = {x, index, src};
  return dispatch(OpId::ScatterAdd, in, a);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return kiln::index_select(*this, dim, index);
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return kiln::gather(*this, dim, index);
}

}  // namespace kiln
