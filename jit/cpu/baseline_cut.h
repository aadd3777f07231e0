// How the baseline tier cuts a reduction kernel (loop_kernel.h "Row kernels", "Column
// kernels") into pointwise baseline kernels and folds: what a row kernel's and a column kernel's
// baseline code (baseline_row_kernel.h, baseline_column_kernel.h) share. A private header of
// jit/cpu.
//
// Every computed row value (a Reduce's result; a row operation: a mean, an rstd, log-sum-exp)
// gets an array of one value per row (per column in a column kernel): its *slot*. The steps, in
// order:
//   - a *values* part per level: the row operations computable once that many Reduces are done,
//     over the row values' index (its elements the rows, or the columns), stored to their slots
//     where read outside that part;
//   - per Reduce a *pass* part: its operand's element values into a buffer, then a fold into
//     its slot (the caller's: by the row program, or the column program);
//   - an *element* part: the element outputs, reading row values from their slots;
//   - a last values part: the row outputs, after every read of the inputs (an output that took
//     over an input's buffer is written last, as the rendered kernels write it).
// RowSize becomes a param after the kernel's own (its value per launch: fill_row_sizes).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "jit/cpu/baseline_kernel.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit::baseline_cut {

// Where a part's operand points.
enum class Source : uint8_t {
  Operand,    // an operand of the kernel (outputs first, then inputs)
  RowValues,  // a row value's slot (`index`)
  Buffer,     // the buffer a pass fills
};
struct Arg {
  Source source = Source::Operand;
  int32_t index = 0;
  DType type{};
  friend bool operator==(const Arg&, const Arg&) = default;
};

struct Part {
  std::unique_ptr<BaselineKernel> code;  // null: nothing to compute
  std::vector<Arg> args;                 // per operand of the part, outputs first
  bool over_values = false;              // over the row values' index, else over the elements
};

struct Step {
  Part part;
  int32_t reduce = -1;  // a pass: the Reduce's ordinal (in expression order), folded after `part`
  ExprOp op{};          // the Reduce
  DType type{};         // its operand's type (the values folded)
  DType result{};       // its result's type
  int32_t slot = -1;    // its result's slot
  int32_t direct = -1;  // its operand is a load of this operand as it is (fold it where it lies
                        // when its layout allows; `part` fills the buffer otherwise)
};

struct Cut {
  std::vector<Step> steps;
  std::vector<DType> operand_types;
  int32_t num_params = 0;
  struct RowSize {
    DType type;
    int64_t offset;
  };
  std::vector<RowSize> row_sizes;  // params num_params + i
  int32_t slots = 0;
  // Element-passes per element: each element part's operations, loads and stores, and four per
  // fold (the cost model of the tier's `pays`).
  int64_t work = 1;
};

// The cut of `k` (k.has_reduce(), no RandUniform, no Reduce of a row value); null where a
// part's op kernels are not all rendered (BaselineKernel::build queues them).
std::unique_ptr<Cut> cut(const LoopKernel& k, JitIsa isa);

// Whether baseline code of `c` pays for a launch over `elements` elements (the cost model:
// c.work element-passes an element within kMaxBaselineWork, baseline_kernel.h).
inline bool pays(const Cut& c, int64_t elements) { return elements <= kMaxBaselineWork / c.work; }

// The cut of `k` (cut()), counted and timed from t0 as a baseline kernel made
// (note_baseline_made); null where cut() declines.
std::unique_ptr<Cut> cut_made(const LoopKernel& k, JitIsa isa, int64_t t0);

// The params of the parts: the kernel's `params`, then each RowSize for `n` reduced elements.
std::vector<uint64_t> part_params(const Cut& c, const uint64_t* params, int64_t n);

// A part's launch geometry. Values parts: `values` elements, operand o at ptrs[o] stepping
// value_step[o] bytes; slots contiguous. Element parts: elem_inner x elem_outer elements,
// operand o with strides elem_in[o] / elem_out[o], a slot broadcast along one of the two
// (`slot_along_inner`: a column kernel's slot runs along the columns, the inner dim), the buffer
// contiguous with `buffer_outer` bytes from one outer index to the next.
struct Place {
  char* const* ptrs = nullptr;
  const int64_t* value_step = nullptr;
  const int64_t* elem_in = nullptr;
  const int64_t* elem_out = nullptr;
  int64_t values = 0, elem_inner = 0, elem_outer = 0;
  char* slots = nullptr;
  int64_t slot_bytes = 0;  // from one slot to the next
  bool slot_along_inner = false;
  char* buffer = nullptr;
  int64_t buffer_outer = 0;
};
void run_part(const Part& p, const Place& at, const uint64_t* params);

}  // namespace kiln::jit::baseline_cut
