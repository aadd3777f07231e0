// tril / triu: keep the lower / upper triangle of the last two dims (batched), zero the rest.
// Element (i, j) is kept by tril when j - i <= k and by triu when j - i >= k.
// Attrs: Tril and Triu use ints[0] = k (the diagonal offset).
#include <algorithm>

#include "ops/cpu/strided_rows.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

void triangle_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& x = c.inputs[0];
  KILN_CHECK(x.impl()->dim() >= 2, "{}: expects a tensor of at least 2 dims, got {}",
             c.op == OpId::Tril ? "tril" : "triu", describe(x));
  m.sizes = x.impl()->sizes();
  m.dtype = x.impl()->dtype();
  m.device = x.impl()->device();
}

template <class T>
void run_triangle(bool lower, int64_t k, const Tensor& x, const Tensor& out) {
  const TensorImpl* xi = x.impl();
  const DimVector& sizes = xi->sizes();
  const int64_t R = sizes[sizes.size() - 2], C = sizes.back();
  k = std::clamp<int64_t>(k, -R - 1, C + 1);  // same triangle, no overflow in i + k + 1
  // No coalescing: every run is one matrix row, whose index the kernel needs.
  StridedRows<2> rows(sizes, {contiguous_strides(sizes), xi->strides()}, /*coalesce=*/false);
  T* o = static_cast<T*>(out.impl()->data());
  const T* xs = static_cast<const T*>(xi->data());
  const int64_t sx = rows.inner_stride(1);
  const int64_t nrows = rows.numel() / C;
  parallel_for(0, nrows, std::max<int64_t>(1, kParallelGrain / C), [&](int64_t b, int64_t e) {
    int64_t r = b;
    rows.for_range(b * C, e * C, [&](const StridedRows<2>::Offsets& off, int64_t n) {
      const int64_t i = r++ % R;
      // Kept columns: [0, split) for tril, [split, C) for triu.
      const int64_t split = std::clamp<int64_t>(lower ? i + k + 1 : i + k, 0, n);
      const int64_t keep_lo = lower ? 0 : split, keep_hi = lower ? split : n;
      T* op = o + off[0];
      const T* xp = xs + off[1];
      std::fill(op, op + keep_lo, T{});
      for (int64_t j = keep_lo; j < keep_hi; ++j) op[j] = xp[j * sx];
      std::fill(op + keep_hi, op + n, T{});
    });
  });
}

void triangle_eager(const OpCall& c, const Tensor& out) {
  visit_dtype(c.inputs[0].impl()->dtype(), [&]<class T>(TypeTag<T>) {
    run_triangle<T>(c.op == OpId::Tril, c.attrs.ints[0], c.inputs[0], out);
  });
}

Tensor triangle(OpId id, const Tensor& x, int64_t k) {
  Attrs a;
  a.ints[0] = k;
  const Tensor in[] = {x};
  return dispatch(id, in, a);
}

}  // namespace

void register_triangle_ops() {
  register_op(OpId::Tril, {"tril", triangle_meta, triangle_eager, kNoFlags});
  register_op(OpId::Triu, {"triu", triangle_meta, triangle_eager, kNoFlags});
}

Tensor tril(const Tensor& x, int64_t k) { return triangle(OpId::Tril, x, k); }
Tensor triu(const Tensor& x, int64_t k) { return triangle(OpId::Triu, x, k); }
Tensor Tensor::tril(int64_t k) const { return kiln::tril(*this, k); }
Tensor Tensor::triu(int64_t k) const { return kiln::triu(*this, k); }

}  // namespace kiln
