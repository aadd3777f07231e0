// The dispatcher core (DESIGN.md, "The flow of one op"): every op enters through dispatch(),
// which runs the op's meta function (shapes, dtypes, devices, errors; in every mode) and then
// hands the call to the active mode. Only the eager mode exists in runtime/; the recorder
// installs itself as a ModeHandler per thread, so the eager path pays one predictable branch.
#pragma once
#include <span>

#include "runtime/attrs.h"
#include "runtime/op_list.h"
#include "runtime/tensor.h"

namespace kiln {

struct OpCall {
  OpId op;
  std::span<const Tensor> inputs;
  const Attrs& attrs;
};

// What the meta function decides about the output. For view ops it also gives the view's
// geometry (strides and offset in elements, absolute in input 0's storage).
struct OutputMeta {
  DimVector sizes;
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  DimVector strides;   // views only
  int64_t offset = 0;  // views only
};

using MetaFn = void (*)(const OpCall& call, OutputMeta& out);
// Writes the op's result into `out`, which the dispatcher allocated from the meta (row-major),
// or, for ops flagged kWritesAnyLayout, which may be any strided destination of the meta dtype.
using EagerFn = void (*)(const OpCall& call, const Tensor& out);

enum OpFlags : uint32_t {
  kNoFlags = 0,
  kIsView = 1u << 0,          // output aliases input 0's storage; meta gives strides/offset
  kWritesAnyLayout = 1u << 1, // elementwise kernel: may write into any strided `out` directly
  kIsRandom = 1u << 2,        // consumes Philox offsets (ops/random.h documents how many)
};

struct OpDef {
  const char* name = nullptr;
  MetaFn meta = nullptr;
  EagerFn eager = nullptr;
  uint32_t flags = kNoFlags;
};

// Registers the definition of one op (called by ops/ at init; see runtime/init.h).
void register_op(OpId id, const OpDef& def);
const OpDef& op_def(OpId id);

// A mode other than eager (the recorder, a speculation) handles calls on this thread while
// installed. It receives the call after the meta function accepted it.
class ModeHandler {
 public:
  virtual ~ModeHandler() = default;
  virtual Tensor handle(const OpDef& def, const OpCall& call, OutputMeta& meta) = 0;
  // The in-place form: the result must end up written into `out` (whose version it bumps).
  virtual void handle_into(const OpDef& def, const OpCall& call, OutputMeta& meta,
                           Tensor& out) = 0;
};
ModeHandler* current_mode();
void set_current_mode(ModeHandler* handler);  // nullptr returns to eager

// Runs one op and returns its output.
Tensor dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs);
// Runs one op and writes its output into `out` (an in-place op when `out` is also an input):
// the result must have out's shape and be castable to out's dtype (PyTorch's rule).
void dispatch_into(OpId id, std::span<const Tensor> inputs, const Attrs& attrs, Tensor& out);

// Runs an op eagerly on materialized inputs (the eager mode, and the tracer's interpreter).
Tensor run_eager(const OpDef& def, const OpCall& call, const OutputMeta& meta);

// Allocates a row-major tensor (no initialisation).
Tensor empty_tensor(const DimVector& sizes, DType dtype, Device device);

}  // namespace kiln
