// The baseline tier of CPU row kernels (loop_kernel.h "Row kernels"): code for a new row kernel
// in microseconds, while its own rendering (render_reduce.h: 100-400 µs in situ, a large
// cross-entropy's over 1 ms) runs on the planning thread; the CpuKernel swaps the rendered code
// in when it is ready, as for pointwise kernels (baseline_kernel.h, KILN_JIT_BASELINE).
//
// A baseline row kernel is the row kernel cut into pointwise kernels, each run as baseline code
// (BaselineKernel: op kernels over tiles), and folds in plain C++ (jit/loop/row_fold.h), block
// of rows by block of rows (about kBlockElements elements, at least one row):
//   - a *rows* kernel per level: the row values that the Reduces done so far make computable
//     (level 0: those of no Reduce), its elements the block's rows, each stored to an array of
//     one value per row;
//   - per Reduce, a *pass* kernel: its operand's element values over the block into a row
//     buffer (none where the operand is a contiguous input: folded where it lies), then the fold
//     of each row by the Reduce's row program into that Reduce's array;
//   - an *element* kernel: the element outputs, reading row values from their arrays (broadcast
//     along the row);
//   - a last rows kernel: the row outputs from the arrays (after every read of the inputs, so an
//     output that took over an input's buffer is written last, as the rendered kernel writes it).
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

#include "jit/cpu/baseline_kernel.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

class BaselineRowKernel {
 public:
  // Elements per block of rows: its row buffer and arrays stay in L1 and L2.
  static constexpr int64_t kBlockElements = 1024;

  // Timed, traced and counted as BaselineKernel::make's are. Null too where a launch over
  // `elements` (> 0: the planner's hint) would not pay.
  static std::unique_ptr<BaselineRowKernel> make(const LoopKernel& k, JitIsa isa,
                                                 int64_t elements = 0);

  // Whether baseline code pays for a launch over `elements` elements (rows times their length):
  // its work, about one pass over the elements per operation, store and row-value broadcast of
  // its parts and four per fold, within kMaxBaselineWork element-passes (baseline_kernel.h), as
  // for pointwise kernels. Measured (2026-12-05, 2-core Zen 5, kiln-perf under
  // KILN_JIT_BASELINE=only, 8192 x 1024 Float32): layer norm 6.1 ms on baseline code against
  // 1.0 rendered, softmax 6.5 against 1.4: 0.6 ns an element more, which a render of 0.3 ms
  // pays back past about half a million elements; the limit here falls near 200 thousand.
  bool pays(int64_t elements) const { return elements <= kMaxBaselineWork / work_; }

  // Whether run() takes rows of `n` elements.
  static bool takes_rows(int64_t n);

  // A call over `rows` rows: ptrs and outer as the row function's (render_reduce.h), `params`
  // the kernel's runtime parameters (8 bytes each), programs[q] the row program of the q-th
  // Reduce (in expression order) for rows of n.
  void run(std::span<const InnerLayout> layout, char* const* ptrs, const int64_t* outer, int64_t n,
           int64_t rows, const uint64_t* params,
           const std::vector<std::vector<int64_t>>& programs) const;

  // Where a derived kernel's operand points (public for the builder in the .cpp).
  enum class Source : uint8_t {
    Operand,    // an operand of the row kernel (outputs first, then inputs)
    RowValues,  // the array of a row value (`index`: its slot)
    RowBuffer,  // the row buffer a pass fills
  };
  struct Arg {
    Source source = Source::Operand;
    int32_t index = 0;
    DType type{};
    friend bool operator==(const Arg&, const Arg&) = default;
  };

 private:
  // One pointwise kernel the row kernel is cut into: over the block's rows (`over_rows`: one
  // element per row) or over its elements.
  struct Part {
    std::unique_ptr<BaselineKernel> code;
    std::vector<Arg> args;  // per operand of the derived kernel, outputs first
    bool over_rows = false;
  };
  struct Step {
    Part part;            // may be empty (a fold alone)
    int32_t reduce = -1;  // a pass: the Reduce's ordinal, folded after `part`
    ExprOp op{};          // the Reduce
    DType type{};         // its operand's type (the values folded)
    int32_t slot = -1;    // its array
    int32_t direct = -1;  // its operand is a load of this operand (folded where it lies when
                          // contiguous; `part` fills the buffer otherwise)
  };
  void run_part(const Part& p, std::span<const InnerLayout> layout, char* const* ptrs,
                const int64_t* outer, int64_t n, int64_t rows, const uint64_t* params, char* arrays,
                char* buffer) const;

  std::vector<Step> steps_;
  int32_t num_outputs_ = 0;
  std::vector<DType> operand_types_;
  int32_t num_params_ = 0;
  // Params num_params_ + i of every derived kernel: RowSize, (type)(n + offset).
  struct RowSizeParam {
    DType type;
    int64_t offset;
  };
  std::vector<RowSizeParam> row_sizes_;
  int32_t slots_ = 0;  // row-value arrays (8 bytes per row each)
  int64_t work_ = 1;   // element-passes per element (pays)
};

}  // namespace kiln::jit
