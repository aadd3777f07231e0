// The baseline tier of CPU column kernels (loop_kernel.h "Column kernels", render_cols.h): code
// for a new column kernel in microseconds while its rendering (100-200 µs in situ) runs on the
// planning thread, as for pointwise and row kernels (baseline_kernel.h, baseline_row_kernel.h,
// KILN_JIT_BASELINE).
//
// The column kernel is cut as baseline_cut.h describes, its row values being one per column,
// and a call (an outer index's n reduced rows of w columns) runs block of columns by block of
// columns (kBlockColumns): the values parts over the block's columns; per Reduce, the column
// program's pieces (runs of at most 64 rows) each a pass part over its rows into a buffer and
// a fold of each column in row order (jit/loop/row_fold.h fold_column_piece), the levels
// combined as the program says; then the element part over all the rows, reading the columns'
// values broadcast down the rows; then the row outputs.
//
// Contract:
//   - run() computes what the rendered column function computes for a call that reduces all n
//     rows (render_cols.h), every operand Contiguous or Broadcast along the columns as `layout`
//     says, `row_stride` bytes from one reduced row to the next: the same bits, since each
//     expression is computed by its op kernel and each column folds in the column program's
//     order (argmax / argmin: the first extreme, which any order finds).
//   - Not the calls of a launch that splits the rows across threads by chunks (the launcher
//     renders for those).
//   - Reentrant; single-threaded (the launcher splits the calls across threads).
// make() declines what column_kernel_ok declines, a RandUniform, and kernels whose op kernels are
// not all rendered yet (queued).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "jit/cpu/baseline_cut.h"
#include "jit/cpu/baseline_kernel.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

class BaselineColumnKernel {
 public:
  // Columns per block: a piece's buffer (64 rows) and the levels stay in L1 and L2.
  static constexpr int64_t kBlockColumns = 256;

  // Timed, traced and counted as BaselineKernel::make's are.
  static std::unique_ptr<BaselineColumnKernel> make(const LoopKernel& k, JitIsa isa);

  // As BaselineRowKernel::pays (the same cost model, folds included).
  bool pays(int64_t elements) const { return baseline_cut::pays(*cut_, elements); }

  // A call over n rows of w columns at ptrs (row 0, column 0 of the block), `params` the
  // kernel's runtime parameters (8 bytes each), `program` column_program(n).
  void run(std::span<const InnerLayout> layout, char* const* ptrs, const int64_t* row_stride,
           int64_t n, int64_t w, const uint64_t* params, const std::vector<int64_t>& program) const;

 private:
  std::unique_ptr<baseline_cut::Cut> cut_;
};

}  // namespace kiln::jit
