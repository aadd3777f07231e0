// The baseline tier of CPU row kernels (loop_kernel.h "Row kernels"): code for a new row kernel
// in microseconds, while its own rendering (render_reduce.h: 100-400 µs in situ, a large
// cross-entropy's over 1 ms) runs on the planning thread; the CpuKernel swaps the rendered code
// in when it is ready, as for pointwise kernels (baseline_kernel.h, KILN_JIT_BASELINE).
//
// A baseline row kernel is the row kernel cut into pointwise kernels, each run as baseline code
// (BaselineKernel: op kernels over tiles), and folds in plain C++ (jit/loop/row_fold.h), as
// baseline_cut.h describes, block of rows by block of rows (about kBlockElements elements, at
// least one row): values parts over the block's rows (a row load is an input strided by the row
// stride), pass parts filling a row buffer (none where a Reduce's operand is a contiguous input:
// folded where it lies), each row folded by its Reduce's row program, the element part reading
// row values broadcast along the row.
//
// Contract:
//   - run() computes what the rendered row function computes for a call over `rows` rows of `n`
//     elements (render_reduce.h), with every operand Contiguous or Broadcast along the row as
//     `layout` says: the same bits, since each expression is computed by its op kernel (the
//     instructions it gets in any fused kernel) and each Reduce folds in its row program's order.
//   - It takes rows of at most kRowProgramChunk elements, one call per row range (not the chunked
//     calls of a long row split across threads: the launcher renders for those).
//   - Reentrant; single-threaded (the launcher splits rows across threads).
// make() declines (null) kernels with a RandUniform, a column-only Reduce (ReduceArgMax /
// ReduceArgMin), a Reduce of a row value or of a non-float type, and kernels whose op kernels are
// not all rendered yet (BaselineKernel::make queues those renders).
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

class BaselineRowKernel {
 public:
  // Elements per block of rows: its row buffer and arrays stay in L1 and L2.
  static constexpr int64_t kBlockElements = 1024;

  // Timed, traced and counted as BaselineKernel::make's are.
  static std::unique_ptr<BaselineRowKernel> make(const LoopKernel& k, JitIsa isa);

  // Whether baseline code pays for a launch over `elements` elements (rows times their length):
  // its work, about one pass over the elements per operation, store and row-value broadcast of
  // its parts and four per fold, within kMaxBaselineWork element-passes (baseline_kernel.h), as
  // for pointwise kernels. Measured (2026-12-05, 2-core Zen 5, kiln-perf under
  // KILN_JIT_BASELINE=only, 8192 x 1024 Float32): layer norm 6.1 ms on baseline code against
  // 1.0 rendered, softmax 6.5 against 1.4: 0.6 ns an element more, which a render of 0.3 ms
  // pays back past about half a million elements; the limit here falls near 200 thousand.
  bool pays(int64_t elements) const { return baseline_cut::pays(*cut_, elements); }

  // Whether run() takes rows of `n` elements.
  static bool takes_rows(int64_t n);

  // A call over `rows` rows: ptrs and outer as the row function's (render_reduce.h), `params`
  // the kernel's runtime parameters (8 bytes each), programs[q] the row program of the q-th
  // Reduce (in expression order) for rows of n.
  void run(std::span<const InnerLayout> layout, char* const* ptrs, const int64_t* outer, int64_t n,
           int64_t rows, const uint64_t* params,
           const std::vector<std::vector<int64_t>>& programs) const;

 private:
  std::unique_ptr<baseline_cut::Cut> cut_;
};

}  // namespace kiln::jit
