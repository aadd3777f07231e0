// softmax and log_softmax along one dim: primitive row kernels (OpId::Softmax, OpId::LogSoftmax).
// Attrs: ints[0] = dim (may be negative; wrapped by the meta function and the kernel).
//
// Output dtype: the input's float dtype (Int32/Int64/Bool compute in Float32). The kernel works on
// a row-major copy of the input viewed as [outer, n, inner] (n = size of dim): each row is
// max-subtracted before exp so large logits do not overflow. softmax over the innermost dim
// (inner == 1) is the chain amax, exp(x - max), sum, e * (1 / sum) with the max and the sum in
// the eager reductions' order (ops/reduce.h softmax_rows), bit for bit, so the JIT fuses it
// into a row kernel with eager's bits (jit/lower/lower_reduce.h); log_softmax over it is x -
// (max + log(sum)) with the same max and sum (since 2026-11-28: before, an in-order scalar sum,
// 3x slower). When dim is not innermost (inner > 1), softmax_cols (ops/reduce.h) takes the
// columns' maxima and sums of exp(x - max) in the column reductions' order, walking the rows in
// memory order, then writes each row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/eager_helpers.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/nn_registry.h"
#include "ops/reduce.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

const char* name_of(OpId id) { return id == OpId::Softmax ? "softmax" : "log_softmax"; }

void softmax_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  wrap_dim(name_of(c.op), c.attrs.ints[0], x->dim());
  m.sizes = x->sizes();
  m.dtype = to_floating(x->dtype());
  m.device = x->device();
}

void softmax_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl* o = out.impl();
  const Tensor x = eager_contiguous(c.inputs[0], o->dtype());
  const int64_t ndim = o->dim();
  const int64_t dim = wrap_dim(name_of(c.op), c.attrs.ints[0], ndim);
  int64_t outer = 1, inner = 1;
  const int64_t n = ndim == 0 ? 1 : o->sizes()[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= o->sizes()[d];
  for (int64_t d = dim + 1; d < ndim; ++d) inner *= o->sizes()[d];
  const bool log = c.op == OpId::LogSoftmax;
  visit_dtype(o->dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = static_cast<const T*>(x.impl()->data());
      T* yp = static_cast<T*>(o->data());
      if (inner == 1) {
        // log_softmax keeps its exps in y before it reads x again: an output in the input's
        // memory reads a copy of it.
        std::vector<T> copy;
        if (log && xp == yp) copy.assign(xp, xp + outer * n);
        softmax_rows(copy.empty() ? xp : copy.data(), yp, outer, n, log);
        return;
      }
      softmax_cols(xp, yp, outer, n, inner, log);  // the active ISA's (ops/reduce.h)
    } else {
      fail("{}: internal error: non-float output dtype {}", name_of(c.op), o->dtype());
    }
  });
}

Tensor softmax_op(OpId id, const Tensor& x, int64_t dim) {
  Attrs a;
  a.ints[0] = dim;
  const Tensor in[] = {x};
  return dispatch(id, in, a);
}

}  // namespace

void register_softmax_ops() {
  register_op(OpId::Softmax, {"softmax", softmax_meta, softmax_eager, kNoFlags});
  register_op(OpId::LogSoftmax, {"log_softmax", softmax_meta, softmax_eager, kNoFlags});
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_op(OpId::Softmax, x, dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_op(OpId::LogSoftmax, x, dim); }
Tensor Tensor::softmax(int64_t dim) const { return kiln::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return kiln::log_softmax(*this, dim); }

}  // namespace kiln
