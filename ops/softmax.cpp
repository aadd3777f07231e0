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
// 3x slower). When dim is not innermost (inner > 1) it sweeps a block of `inner` columns at once,
// so every memory access stays unit-stride; the work is split over (outer, column block) pairs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu/vecmath/exp_log.h"
#include "ops/cpu/vecmath/gnu_vec_ops.h"
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

// exp and log through kiln's vector math (the bits of the exp/log ops; ops/cpu/vecmath/).
constexpr int kVecBytes = vecmath::kNativeVecBytes;
auto vexp = [](const auto& o, auto v) { return vecmath::exp(o, v); };
auto vlog = [](const auto& o, auto v) { return vecmath::log(o, v); };
template <class T>
void exp_inplace(T* p, int64_t n) {
  vecmath::map_contiguous<T, kVecBytes>(p, p, n, vexp);
}

// Rows [n] at stride `inner`, columns [c0, c1) of one outer slice; out has the same layout.
template <class T>
void softmax_block(const T* x, T* y, int64_t n, int64_t inner, int64_t c0, int64_t c1, bool log,
                   T* mx, T* sum) {
  const int64_t w = c1 - c0;
  std::fill(mx, mx + w, -std::numeric_limits<T>::infinity());
  std::fill(sum, sum + w, T(0));
  for (int64_t j = 0; j < n; ++j) {
    const T* row = x + j * inner + c0;
    for (int64_t i = 0; i < w; ++i) mx[i] = std::max(mx[i], row[i]);
  }
  T e[64];  // w <= kBlock
  for (int64_t j = 0; j < n; ++j) {
    const T* row = x + j * inner + c0;
    T* out = y + j * inner + c0;
    for (int64_t i = 0; i < w; ++i) e[i] = row[i] - mx[i];
    exp_inplace(e, w);
    for (int64_t i = 0; i < w; ++i) {
      sum[i] += e[i];
      if (!log) out[i] = e[i];
    }
  }
  if (log) {
    vecmath::map_contiguous<T, kVecBytes>(sum, sum, w, vlog);
    for (int64_t i = 0; i < w; ++i) sum[i] = mx[i] + sum[i];  // logsumexp
    for (int64_t j = 0; j < n; ++j) {
      const T* row = x + j * inner + c0;
      T* out = y + j * inner + c0;
      for (int64_t i = 0; i < w; ++i) out[i] = row[i] - sum[i];
    }
  } else {
    for (int64_t i = 0; i < w; ++i) sum[i] = T(1) / sum[i];
    for (int64_t j = 0; j < n; ++j) {
      T* out = y + j * inner + c0;
      for (int64_t i = 0; i < w; ++i) out[i] *= sum[i];
    }
  }
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
  constexpr int64_t kBlock =
      64;  // columns (softmax_block's buffer size) swept together when dim is not innermost
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t grain =
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n * std::min(inner, kBlock)));
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
      parallel_for(0, outer * blocks, grain, [&](int64_t t0, int64_t t1) {
        T mx[kBlock], sum[kBlock];
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t ob = t / blocks, cb = t % blocks;
          const int64_t c0 = cb * kBlock, c1 = std::min(inner, c0 + kBlock);
          softmax_block<T>(xp + ob * n * inner, yp + ob * n * inner, n, inner, c0, c1, log, mx,
                           sum);
        }
      });
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
