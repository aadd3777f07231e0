#include "ops/cpu/reduce_plan.h"

#include <algorithm>
#include <cstring>

#include "runtime/parallel.h"

namespace kiln {

namespace {

struct Dim {
  int64_t size, stride;
};

bool dense(const Dim* d, size_t nd) {
  int64_t expected = 1;
  for (size_t i = nd; i-- > 0;) {
    if (d[i].stride != expected) return false;
    expected *= d[i].size;
  }
  return true;
}

// Copies x into row-major [kept..., reduced...] order (dims given in `order`, nk kept first).
template <class E>
void gather(const char* base, const SmallVector<Dim, 8>& order, size_t nk, int64_t m, int64_t n,
            E* dst) {
  const size_t nd = order.size();
  const size_t nr = nd - nk;
  parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)),
               [&](int64_t b, int64_t e) {
                 DimVector idx(nr, 0);
                 for (int64_t r = b; r < e; ++r) {
                   int64_t off = 0, rem = r;
                   for (size_t d = nk; d-- > 0;) {
                     off += (rem % order[d].size) * order[d].stride;
                     rem /= order[d].size;
                   }
                   E* out = dst + r * n;
                   const E* src = reinterpret_cast<const E*>(base) + off;
                   if (nr == 0) {
                     out[0] = src[0];
                     continue;
                   }
                   // Odometer over the reduced dims; the innermost one is a tight loop.
                   const Dim last = order[nd - 1];
                   std::fill(idx.begin(), idx.end(), 0);
                   int64_t roff = 0;
                   for (int64_t j = 0; j < n; j += last.size) {
                     for (int64_t k = 0; k < last.size; ++k)
                       out[j + k] = src[roff + k * last.stride];
                     for (size_t d = nr - 1; d-- > 0;) {
                       const Dim& dd = order[nk + d];
                       roff += dd.stride;
                       if (++idx[d] < dd.size) break;
                       roff -= dd.stride * dd.size;
                       idx[d] = 0;
                     }
                   }
                 }
               });
}

}  // namespace

ReducePlan plan_reduction(const TensorImpl& x, uint64_t mask, int64_t min_cols) {
  ReducePlan plan;
  SmallVector<Dim, 8> all, kept, red;  // non-1 dims only: size-1 dims never move an address
  SmallVector<bool, 8> is_red;
  int64_t m = 1, n = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    Dim dim{x.sizes()[d], x.strides()[d]};
    bool r = (mask >> d) & 1u;
    (r ? n : m) *= dim.size;
    if (dim.size == 1) continue;
    all.push_back(dim);
    is_red.push_back(r);
    (r ? red : kept).push_back(dim);
  }
  plan.outer = m;
  plan.n = n;
  if (m == 0 || n == 0) return plan;

  std::stable_sort(red.begin(), red.end(),
                   [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  SmallVector<Dim, 8> order = kept;
  for (const Dim& d : red) order.push_back(d);
  if (dense(order.data(), order.size())) {
    plan.data = x.data();
    return plan;
  }

  if (min_cols > 0 && dense(all.data(), all.size())) {
    // The reduced dims must form one block followed by kept dims.
    size_t a = 0, nd = all.size();
    while (a < nd && !is_red[a]) ++a;
    size_t b = a;
    while (b < nd && is_red[b]) ++b;
    bool block =
        a < nd && b < nd && std::find(is_red.begin() + b, is_red.end(), true) == is_red.end();
    int64_t inner = 1;
    for (size_t i = b; i < nd; ++i) inner *= all[i].size;
    if (block && inner >= min_cols) {
      plan.kind = ReducePlan::Kind::Cols;
      plan.inner = inner;
      plan.outer = m / inner;
      plan.data = x.data();
      return plan;
    }
  }

  const size_t isz = itemsize(x.dtype());
  plan.owned.reset(new std::byte[static_cast<size_t>(m * n) * isz]);
  const char* base = static_cast<const char*>(x.data());
  switch (isz) {
    case 1:
      gather(base, order, kept.size(), m, n, reinterpret_cast<uint8_t*>(plan.owned.get()));
      break;
    case 4:
      gather(base, order, kept.size(), m, n, reinterpret_cast<uint32_t*>(plan.owned.get()));
      break;
    default:
      gather(base, order, kept.size(), m, n, reinterpret_cast<uint64_t*>(plan.owned.get()));
  }
  plan.data = plan.owned.get();
  return plan;
}

}  // namespace kiln
