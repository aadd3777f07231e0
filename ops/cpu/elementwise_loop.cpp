#include "ops/cpu/elementwise_loop.h"

#include <cstdlib>

#include "runtime/error.h"
#include "runtime/parallel.h"

namespace kiln {

ElementwiseLoop::ElementwiseLoop(const Tensor& out, std::span<const Tensor> inputs,
                                 std::span<const void* const> scalars) {
  const TensorImpl* o = out.impl();
  nops_ = 1 + static_cast<int>(inputs.size());
  KILN_CHECK(nops_ <= kMaxOperands, "elementwise loop: too many operands ({})", nops_);
  const DimVector& shape = o->sizes();
  int nd = static_cast<int>(shape.size());
  numel_ = o->numel();

  // Fast path (most small eager ops): every tensor operand has out's shape and is contiguous,
  // so the whole space is one dense dim; scalars get stride 0.
  if (o->is_contiguous() && nd > 0) {
    bool dense = true;
    for (size_t i = 0; i < inputs.size() && dense; ++i) {
      if (i < scalars.size() && scalars[i]) continue;
      const TensorImpl* in = inputs[i].impl();
      dense = in->is_contiguous() && in->sizes() == shape;
    }
    if (dense) {
      sizes_.push_back(numel_);
      base_[0] = static_cast<char*>(o->data());
      strides_[0].push_back(int64_t(itemsize(o->dtype())));
      for (int k = 1; k < nops_; ++k) {
        size_t i = k - 1;
        bool scalar = i < scalars.size() && scalars[i];
        base_[k] =
            static_cast<char*>(const_cast<void*>(scalar ? scalars[i] : inputs[i].impl()->data()));
        strides_[k].push_back(scalar ? 0 : int64_t(itemsize(inputs[i].impl()->dtype())));
      }
      ndim_ = numel_ > 1 ? 1 : 0;
      if (ndim_ == 0) {
        sizes_.clear();
        for (int k = 0; k < nops_; ++k) strides_[k].clear();
      }
      return;
    }
  }

  // Byte strides per operand over the output's dims (0 where an input broadcasts).
  std::array<DimVector, kMaxOperands> st;
  st[0].resize(nd);
  base_[0] = static_cast<char*>(o->data());
  for (int d = 0; d < nd; ++d) st[0][d] = o->strides()[d] * int64_t(itemsize(o->dtype()));
  for (int k = 1; k < nops_; ++k) {
    st[k].assign(nd, 0);
    size_t in_idx = k - 1;
    if (in_idx < scalars.size() && scalars[in_idx]) {
      base_[k] = static_cast<char*>(const_cast<void*>(scalars[in_idx]));
      continue;
    }
    const TensorImpl* in = inputs[in_idx].impl();
    base_[k] = static_cast<char*>(in->data());
    int off = nd - static_cast<int>(in->dim());
    int64_t isz = int64_t(itemsize(in->dtype()));
    for (int d = 0; d < in->dim(); ++d)
      st[k][d + off] = in->sizes()[d] == 1 ? 0 : in->strides()[d] * isz;
  }

  // Drop size-1 dims and merge dim d into d+1 when contiguous for every operand.
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (!sizes_.empty()) {
      bool merge = true;
      for (int k = 0; k < nops_ && merge; ++k) merge = strides_[k].back() == st[k][d] * shape[d];
      if (merge) {
        sizes_.back() *= shape[d];
        for (int k = 0; k < nops_; ++k) strides_[k].back() = st[k][d];
        continue;
      }
    }
    sizes_.push_back(shape[d]);
    for (int k = 0; k < nops_; ++k) strides_[k].push_back(st[k][d]);
  }
  ndim_ = static_cast<int>(sizes_.size());
}

void ElementwiseLoop::run_range(int64_t begin, int64_t end, InnerLoop inner,
                                const Scalar* params) const {
  if (begin >= end) return;
  std::array<char*, kMaxOperands> ptrs;
  std::array<int64_t, kMaxOperands> inner_strides{};
  if (ndim_ == 0) {
    inner(base_.data(), inner_strides.data(), 1, params);
    return;
  }
  const int last = ndim_ - 1;
  for (int k = 0; k < nops_; ++k) inner_strides[k] = strides_[k][last];
  DimVector idx(ndim_);
  int64_t rem = begin;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % sizes_[d];
    rem /= sizes_[d];
  }
  int64_t i = begin;
  while (i < end) {
    for (int k = 0; k < nops_; ++k) {
      char* p = base_[k];
      for (int d = 0; d < ndim_; ++d) p += idx[d] * strides_[k][d];
      ptrs[k] = p;
    }
    int64_t n = std::min(sizes_[last] - idx[last], end - i);
    inner(ptrs.data(), inner_strides.data(), n, params);
    i += n;
    idx[last] += n;
    for (int d = last; d > 0 && idx[d] == sizes_[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

bool ElementwiseLoop::tiles() const {
  if (ndim_ < 2) return false;
  const int last = ndim_ - 1;
  if (sizes_[last] < 2 * kTileCols || sizes_[last - 1] < 2 || std::abs(strides_[0][last]) > 16)
    return false;
  for (int k = 1; k < nops_; ++k) {
    const int64_t inner = std::abs(strides_[k][last]), next = std::abs(strides_[k][last - 1]);
    if (inner >= 64 && next != 0 && next < inner) return true;
  }
  return false;
}

void ElementwiseLoop::run_tiles(InnerLoop inner, const Scalar* params) const {
  const int last = ndim_ - 1;
  const int64_t rows = sizes_[last - 1], cols = sizes_[last];
  const int64_t tr = (rows + kTileRows - 1) / kTileRows, tc = (cols + kTileCols - 1) / kTileCols;
  const int64_t outer = numel_ / (rows * cols);
  std::array<int64_t, kMaxOperands> inner_strides{};
  for (int k = 0; k < nops_; ++k) inner_strides[k] = strides_[k][last];
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (kTileRows * kTileCols));
  parallel_for(0, outer * tr * tc, grain, [&](int64_t b, int64_t e) {
    std::array<char*, kMaxOperands> ptrs;
    for (int64_t t = b; t < e; ++t) {
      const int64_t c = t % tc, r = t / tc % tr;
      int64_t o = t / (tc * tr);
      std::array<char*, kMaxOperands> base = base_;
      for (int d = last - 2; d >= 0; --d) {  // the outer dims' index of tile t
        const int64_t i = o % sizes_[d];
        o /= sizes_[d];
        for (int k = 0; k < nops_; ++k) base[k] += i * strides_[k][d];
      }
      const int64_t r1 = std::min(rows, (r + 1) * kTileRows), c0 = c * kTileCols;
      const int64_t n = std::min(cols, c0 + kTileCols) - c0;
      for (int64_t i = r * kTileRows; i < r1; ++i) {
        for (int k = 0; k < nops_; ++k)
          ptrs[k] = base[k] + i * strides_[k][last - 1] + c0 * strides_[k][last];
        inner(ptrs.data(), inner_strides.data(), n, params);
      }
    }
  });
}

void ElementwiseLoop::run(InnerLoop inner, const Scalar* params) const {
  if (tiles()) return run_tiles(inner, params);
  parallel_for(0, numel_, kParallelGrain,
               [&](int64_t b, int64_t e) { run_range(b, e, inner, params); });
}

}  // namespace kiln
