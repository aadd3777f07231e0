// How a reduction walks its input. A reduction keeps some dims and reduces the others; the plan
// reduces every layout to one of two dense shapes so the kernels only ever see contiguous memory:
//   Rows: [outer, n]        each output reduces one contiguous row of n elements;
//   Cols: [outer, n, inner] each output reduces a column of n elements at distance `inner`
//                           (a kept contiguous inner dim: accumulate whole rows into a vector).
// Both are read in memory order (dims by decreasing stride), so a dense transposed input is one
// of them too (`x.t().sum(-1)` reads x as columns). Inputs that are neither (sliced, expanded,
// permuted kept dims) are gathered once into a Rows buffer with the reduced dims innermost,
// ordered by decreasing input stride for locality.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/allocator.h"
#include "runtime/parallel.h"
#include "runtime/tensor_impl.h"

namespace kiln {

struct ReducePlan {
  enum class Kind { Rows, Cols };
  Kind kind = Kind::Rows;
  int64_t outer = 1;  // outputs (Rows) or outer blocks (Cols)
  int64_t n = 1;      // elements reduced into each output
  int64_t inner = 1;  // Cols only: kept contiguous inner extent
  const void* data = nullptr;
  CpuScratch owned;  // the gathered copy, when one was needed
  // A gather left to the caller (plan_reduction's `defer`): writes rows [r0, r1) of the
  // gathered Rows to dst, row-major; data is null until gathered (for_row_blocks does it).
  std::function<void(int64_t r0, int64_t r1, void* dst)> gather_rows;

  // Out of line (reduce_plan.cpp, baseline flags): the ISA kernel objects that hold plans must
  // not emit a weak copy built for their ISA, which the linker could keep for baseline callers
  // (tests/cmake/check_isa_symbols.cmake).
  ReducePlan();
  ~ReducePlan();
  ReducePlan(ReducePlan&&) noexcept;
  ReducePlan& operator=(ReducePlan&&) noexcept;

  int64_t outputs() const { return outer * inner; }
  template <class T>
  const T* ptr() const {
    return static_cast<const T*>(data);
  }
};

// Where the reduced dims (bit d of `mask`: dim d) lie among the dims of size other than 1: for a
// row-major input, the layout plan_reduction gives (which looks at the dims in memory order):
// none reduced (read as it is), the last ones (rows in place), one block followed by kept dims
// only (columns, for an op with a column kernel), anything else (gathered rows). The JIT's
// gathered reductions ask it (jit/passes/gathered_rows.h).
enum class ReducedRun { None, Last, BlockThenKept, Scattered };
ReducedRun reduced_run(const DimVector& sizes, uint64_t mask);

// mask: bit d set when dim d is reduced. min_cols: the fewest kept columns (the kept extent after
// the reduced block) for which the op reduces in the Cols layout; 0: the op has no column kernel.
// With zero outputs or n == 0 the plan has no data (callers fill outputs or return).
// defer: a plan that needs a gather leaves it to for_row_blocks (gather_rows set, no data).
ReducePlan plan_reduction(const TensorImpl& x, uint64_t mask, int64_t min_cols, bool defer = false);

// Writes rows [r0, r1) of x, whose last `reduced` dims are a row's elements in x's own order
// (row-major over x's dims), to dst row-major, as plan_reduction's gather does: a JIT gather of
// a leaf per block (jit/plan/gathered_step.h). Empty where x's reduced dims of size other than
// 1 do not run by decreasing stride (plan_reduction would order them otherwise), or x is empty.
std::function<void(int64_t r0, int64_t r1, void* dst)> rows_gatherer(const TensorImpl& x,
                                                                     int reduced);

// Gathered rows run per block of rows (for_row_blocks here, the JIT's gathered steps:
// jit/plan/gathered_step.h) where the gather is at least config().gather_block_min_kib
// (KILN_GATHER_BLOCK_MIN_KIB, default 4 MiB) and one slab (a row, or one index of the JIT's
// leading dim) at most kRowBlockMaxSlabBytes, in blocks of about kRowBlockBytes.
inline constexpr int64_t kRowBlockBytes = int64_t{256} << 10;
inline constexpr int64_t kRowBlockMaxSlabBytes = int64_t{2} << 20;

// How `leading` slabs of slab_bytes each split into blocks: per_block slabs a block, `blocks`
// blocks, at least one per thread (a block's gather and reduction run on one thread: nested
// loops run inline); blocks 0: gather whole (small, slabs too large, fewer slabs than threads).
struct RowBlocks {
  int64_t per_block = 0;
  int64_t blocks = 0;
};
RowBlocks plan_row_blocks(int64_t leading, int64_t slab_bytes);

// p's deferred gather run whole into p.owned (for_row_blocks' fallback).
void gather_whole(ReducePlan& p, size_t itemsize);

namespace detail {
inline std::atomic<int64_t> row_block_reductions{0};
}  // namespace detail

// For tests: how many reductions for_row_blocks has run per block of rows in this process.
inline int64_t row_block_reductions() { return detail::row_block_reductions.load(); }

// Calls reduce(rows, first) for p's rows: once with p itself (first 0) where its data is there;
// per block of rows where plan_row_blocks says so, kiln's threads over the blocks, each block
// gathered into a buffer of the thread's own and reduced while in its cache (`rows` a Rows plan
// of that block's rows; first: the block's first row, i.e. its first output); else gathered
// whole first. A row is reduced alone in every case: the same bits (batch-norm statistics of
// [32, 64, 56, 56] gathered whole wrote and read back 25.7 MB). A template: the eager reduction
// calls it for every reduction, which a std::function of its captures would allocate for.
template <class Reduce>
void for_row_blocks(ReducePlan& p, size_t itemsize, const Reduce& reduce) {
  if (!p.gather_rows || p.outer == 0 || p.n == 0) {
    reduce(static_cast<const ReducePlan&>(p), int64_t{0});
    return;
  }
  const int64_t row_bytes = p.n * static_cast<int64_t>(itemsize);
  const RowBlocks b = plan_row_blocks(p.outer, row_bytes);
  if (b.blocks == 0) {
    gather_whole(p, itemsize);
    reduce(static_cast<const ReducePlan&>(p), int64_t{0});
    return;
  }
  detail::row_block_reductions.fetch_add(1, std::memory_order_relaxed);
  parallel_for(0, b.blocks, 1, [&](int64_t b0, int64_t b1) {
    const CpuScratch buffer(static_cast<size_t>(b.per_block * row_bytes));
    ReducePlan rows;
    rows.n = p.n;
    rows.data = buffer.get();
    for (int64_t i = b0; i < b1; ++i) {
      const int64_t r0 = i * b.per_block, r1 = std::min(p.outer, r0 + b.per_block);
      p.gather_rows(r0, r1, buffer.get());
      rows.outer = r1 - r0;
      reduce(static_cast<const ReducePlan&>(rows), r0);
    }
  });
}

}  // namespace kiln
