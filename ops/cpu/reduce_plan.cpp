#include "ops/cpu/reduce_plan.h"

#include <algorithm>
#include <cstring>

#include "runtime/config.h"
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

// Gathers rows [r0, r1) of x in row-major [kept..., reduced...] order to dst (row r0 first).
template <class E>
void gather_rows(const char* base, const SmallVector<Dim, 8>& order, size_t nk, int64_t r0,
                 int64_t r1, int64_t n, E* dst) {
  const size_t nd = order.size();
  const size_t nr = nd - nk;
  DimVector idx(nr, 0);
  for (int64_t r = r0; r < r1; ++r) {
    int64_t off = 0, rem = r;
    for (size_t d = nk; d-- > 0;) {
      off += (rem % order[d].size) * order[d].stride;
      rem /= order[d].size;
    }
    E* out = dst + (r - r0) * n;
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
      if (last.stride == 1)
        std::memcpy(out + j, src + roff, static_cast<size_t>(last.size) * sizeof(E));
      else
        for (int64_t k = 0; k < last.size; ++k) out[j + k] = src[roff + k * last.stride];
      for (size_t d = nr - 1; d-- > 0;) {
        const Dim& dd = order[nk + d];
        roff += dd.stride;
        if (++idx[d] < dd.size) break;
        roff -= dd.stride * dd.size;
        idx[d] = 0;
      }
    }
  }
}

// Whether gather() takes its tiled path (a transposed input's rows: tiles through a buffer).
bool tiled_gather(const SmallVector<Dim, 8>& order, size_t nk) {
  constexpr int64_t kTile = 32;
  return nk >= 1 && order.size() - nk == 1 && order[nk - 1].stride == 1 &&
         order[nk - 1].size >= kTile;
}

// Copies x into row-major [kept..., reduced...] order (dims given in `order`, nk kept first).
template <class E>
void gather(const char* base, const SmallVector<Dim, 8>& order, size_t nk, int64_t m, int64_t n,
            E* dst) {
  const size_t nd = order.size();
  // One reduced dim, rows that differ only in the last kept dim and that dim contiguous in
  // memory (a transposed input, `x.t().sum(-1)`): tiles of kTile rows by kTile reduced elements
  // through a buffer, read along the rows' common lines and written as whole runs of each row.
  // Row by row, every element read was on a line and a page of its own, and element by element
  // across 64 rows every write was ([1024, 4096] from a transposed [4096, 1024]: 16 ms, 9 ms).
  constexpr int64_t kTile = 32;
  if (tiled_gather(order, nk)) {
    const int64_t S = order[nk - 1].size, per = (S + kTile - 1) / kTile;
    const int64_t stride = order[nd - 1].stride;
    parallel_for(0, (m / S) * per, std::max<int64_t>(1, kParallelGrain / (kTile * n)),
                 [&](int64_t b0, int64_t b1) {
                   E buf[kTile][kTile];
                   for (int64_t blk = b0; blk < b1; ++blk) {
                     const int64_t i0 = (blk % per) * kTile, r0 = (blk / per) * S + i0;
                     const int64_t rows = std::min(kTile, S - i0);
                     int64_t off = 0, rem = r0;
                     for (size_t d = nk; d-- > 0;) {
                       off += (rem % order[d].size) * order[d].stride;
                       rem /= order[d].size;
                     }
                     const E* src = reinterpret_cast<const E*>(base) + off;
                     E* out = dst + r0 * n;
                     for (int64_t j0 = 0; j0 < n; j0 += kTile) {
                       const int64_t cols = std::min(kTile, n - j0);
                       for (int64_t c = 0; c < cols; ++c) {
                         const E* q = src + (j0 + c) * stride;
                         for (int64_t i = 0; i < rows; ++i) buf[i][c] = q[i];
                       }
                       for (int64_t i = 0; i < rows; ++i)
                         std::memcpy(out + i * n + j0, buf[i],
                                     static_cast<size_t>(cols) * sizeof(E));
                     }
                   }
                 });
    return;
  }
  parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)),
               [&](int64_t b, int64_t e) { gather_rows(base, order, nk, b, e, n, dst + b * n); });
}

// Whether x over `mask` reduces as columns in memory order (plan_reduction); `inner`: the kept
// extent after the reduced block.
bool columns_in_memory_order(const TensorImpl& x, uint64_t mask, int64_t& inner) {
  struct MemDim {
    Dim dim;
    int64_t logical;
    bool reduced;
  };
  SmallVector<MemDim, 8> mem;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (x.sizes()[d] != 1)
      mem.push_back({{x.sizes()[d], x.strides()[d]}, d, ((mask >> d) & 1u) != 0});
  std::stable_sort(mem.begin(), mem.end(),
                   [](const MemDim& a, const MemDim& b) { return a.dim.stride > b.dim.stride; });
  int64_t expected = 1, last_kept = -1;
  for (size_t i = mem.size(); i-- > 0;) {
    if (mem[i].dim.stride != expected) return false;
    expected *= mem[i].dim.size;
  }
  // kept* reduced+ kept+, the kept dims in increasing logical order.
  size_t i = 0;
  auto kept_in_order = [&] {
    if (mem[i].logical < last_kept) return false;
    last_kept = mem[i].logical;
    return true;
  };
  for (; i < mem.size() && !mem[i].reduced; ++i)
    if (!kept_in_order()) return false;
  if (i == mem.size()) return false;
  while (i < mem.size() && mem[i].reduced) ++i;
  if (i == mem.size()) return false;
  inner = 1;
  for (; i < mem.size(); ++i) {
    if (mem[i].reduced || !kept_in_order()) return false;
    inner *= mem[i].dim.size;
  }
  return true;
}

}  // namespace

ReducePlan::ReducePlan() = default;
ReducePlan::~ReducePlan() = default;
ReducePlan::ReducePlan(ReducePlan&&) noexcept = default;
ReducePlan& ReducePlan::operator=(ReducePlan&&) noexcept = default;

ReducedRun reduced_run(const DimVector& sizes, uint64_t mask) {
  // Over the dims of size other than 1: the first reduced one, the end of its run, and whether
  // another reduced dim follows.
  const int64_t nd = static_cast<int64_t>(sizes.size());
  auto next_real = [&](int64_t i) {
    while (i < nd && sizes[i] == 1) ++i;
    return i;
  };
  auto reduced = [&](int64_t i) { return ((mask >> i) & 1u) != 0; };
  int64_t d = next_real(0);
  while (d < nd && !reduced(d)) d = next_real(d + 1);
  if (d == nd) return ReducedRun::None;
  while (d < nd && reduced(d)) d = next_real(d + 1);
  if (d == nd) return ReducedRun::Last;
  for (; d < nd; d = next_real(d + 1))
    if (reduced(d)) return ReducedRun::Scattered;
  return ReducedRun::BlockThenKept;
}

namespace {

// gather_rows over `order` (nk kept dims first) for elements of isz bytes, as a function.
std::function<void(int64_t, int64_t, void*)> gatherer(const char* base,
                                                      const SmallVector<Dim, 8>& order, size_t nk,
                                                      int64_t n, size_t isz) {
  return [base, order, nk, n, isz](int64_t r0, int64_t r1, void* dst) {
    switch (isz) {
      case 1:
        gather_rows(base, order, nk, r0, r1, n, static_cast<uint8_t*>(dst));
        break;
      case 4:
        gather_rows(base, order, nk, r0, r1, n, static_cast<uint32_t*>(dst));
        break;
      default:
        gather_rows(base, order, nk, r0, r1, n, static_cast<uint64_t*>(dst));
    }
  };
}

// Reduced dims contiguous one within the next as one (batch norm's H and W: runs of H * W
// elements for the gather instead of W): the same elements in the same order.
void merge_contiguous(SmallVector<Dim, 8>& red) {
  for (size_t i = red.size(); i-- > 1;)
    if (red[i - 1].stride == red[i].stride * red[i].size) {
      red[i - 1] = {red[i - 1].size * red[i].size, red[i].stride};
      red.erase(i);
    }
}

// x's dims split for a gather over `mask`: the kept dims of size other than 1 in their order,
// then the reduced ones by decreasing stride (contiguous ones merged); m rows of n elements.
// descending: the reduced dims already ran by strictly decreasing stride (their own order).
struct GatherOrder {
  SmallVector<Dim, 8> order;
  size_t nk = 0;
  int64_t m = 1, n = 1;
  bool descending = true;
};

GatherOrder gather_order(const TensorImpl& x, uint64_t mask) {
  GatherOrder g;
  SmallVector<Dim, 8> red;  // non-1 dims only: size-1 dims never move an address
  for (int64_t d = 0; d < x.dim(); ++d) {
    const Dim dim{x.sizes()[d], x.strides()[d]};
    const bool r = (mask >> d) & 1u;
    (r ? g.n : g.m) *= dim.size;
    if (dim.size == 1) continue;
    if (r && !red.empty() && red.back().stride <= dim.stride) g.descending = false;
    (r ? red : g.order).push_back(dim);
  }
  g.nk = g.order.size();
  std::stable_sort(red.begin(), red.end(),
                   [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  merge_contiguous(red);
  for (const Dim& d : red) g.order.push_back(d);
  return g;
}

}  // namespace

std::function<void(int64_t, int64_t, void*)> rows_gatherer(const TensorImpl& x, int reduced) {
  const int64_t first = x.dim() - reduced;
  uint64_t mask = 0;
  for (int64_t d = first; d < x.dim(); ++d) mask |= uint64_t{1} << d;
  const GatherOrder g = gather_order(x, mask);
  if (!g.descending || g.m == 0 || g.n == 0) return {};  // another order than x's own; empty
  return gatherer(static_cast<const char*>(x.data()), g.order, g.nk, g.n, itemsize(x.dtype()));
}

ReducePlan plan_reduction(const TensorImpl& x, uint64_t mask, int64_t min_cols, bool defer) {
  ReducePlan plan;
  const GatherOrder g = gather_order(x, mask);
  const SmallVector<Dim, 8>& order = g.order;
  const size_t nk = g.nk;
  const int64_t m = g.m, n = g.n;
  plan.outer = m;
  plan.n = n;
  if (m == 0 || n == 0) return plan;

  if (dense(order.data(), order.size())) {
    plan.data = x.data();
    return plan;
  }

  // Columns where the dims in memory order (decreasing stride) are dense, the reduced ones one
  // block there with kept dims after it, and the kept dims in their own order (the outputs are
  // written in that order): a row-major x, and a transposed one as well (`x.t().sum(-1)` of a
  // row-major [4096, 1024] is x's column sum: 0.8 ms in columns, 7 ms gathered into rows, 2-core
  // Zen 1).
  if (min_cols > 0) {
    int64_t inner = 0;
    if (columns_in_memory_order(x, mask, inner) && inner >= min_cols) {
      plan.kind = ReducePlan::Kind::Cols;
      plan.inner = inner;
      plan.outer = m / inner;
      plan.data = x.data();
      return plan;
    }
  }

  const size_t isz = itemsize(x.dtype());
  const char* base = static_cast<const char*>(x.data());
  if (defer && !tiled_gather(order, nk)) {
    plan.gather_rows = gatherer(base, order, nk, n, isz);
    return plan;
  }
  plan.owned = CpuScratch(static_cast<size_t>(m * n) * isz);
  switch (isz) {
    case 1:
      gather(base, order, nk, m, n, reinterpret_cast<uint8_t*>(plan.owned.get()));
      break;
    case 4:
      gather(base, order, nk, m, n, reinterpret_cast<uint32_t*>(plan.owned.get()));
      break;
    default:
      gather(base, order, nk, m, n, reinterpret_cast<uint64_t*>(plan.owned.get()));
  }
  plan.data = plan.owned.get();
  return plan;
}

RowBlocks plan_row_blocks(int64_t leading, int64_t slab_bytes) {
  if (slab_bytes <= 0 || slab_bytes > kRowBlockMaxSlabBytes ||
      leading * slab_bytes < int64_t{config().gather_block_min_kib} * 1024)
    return {};
  const int64_t threads = std::max(2, num_threads());
  const int64_t per_block =
      std::max<int64_t>(1, std::min(kRowBlockBytes / slab_bytes, leading / threads));
  const int64_t blocks = (leading + per_block - 1) / per_block;
  if (blocks < threads) return {};
  return {per_block, blocks};
}

void gather_whole(ReducePlan& p, size_t itemsize) {
  const int64_t row_bytes = p.n * static_cast<int64_t>(itemsize);
  p.owned = CpuScratch(static_cast<size_t>(p.outer * row_bytes));
  // Rows split over kiln's threads as gather() splits them.
  parallel_for(0, p.outer, std::max<int64_t>(1, kParallelGrain / p.n),
               [&](int64_t b, int64_t e) { p.gather_rows(b, e, p.owned.get() + b * row_bytes); });
  p.data = p.owned.get();
}

}  // namespace kiln
