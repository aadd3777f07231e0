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
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/allocator.h"
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

// Gathered rows run per block of rows (for_row_blocks) where the gather is at least
// config().gather_block_min_kib (KILN_GATHER_BLOCK_MIN_KIB, default 4 MiB) and one row at most
// kRowBlocksMaxRowBytes, in blocks of about kRowBlockBytes.
inline constexpr int64_t kRowBlockBytes = int64_t{256} << 10;
inline constexpr int64_t kRowBlocksMaxRowBytes = int64_t{2} << 20;

// Calls reduce(rows, first) for p's rows: once with p itself (first 0) where its data is there;
// for a deferred gather of gather_block_min_kib or more, per block of rows, kiln's threads over
// the blocks, each block gathered into a buffer of the thread's own and reduced while in its
// cache (`rows` a Rows plan of that block's rows; first: the block's first row, i.e. its first
// output); else gathered whole first. A row is reduced alone in every case: the same bits
// (batch-norm statistics of [32, 64, 56, 56] gathered whole wrote and read back 25.7 MB).
void for_row_blocks(ReducePlan& p, size_t itemsize,
                    const std::function<void(const ReducePlan& rows, int64_t first)>& reduce);

// For tests: how many reductions for_row_blocks has run per block of rows in this process.
int64_t row_block_reductions();

}  // namespace kiln
