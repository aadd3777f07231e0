// The dispatcher core (DESIGN.md, "The flow of one op"): every op enters through dispatch(),
// which runs the op's meta function (shapes, dtypes, devices, errors; in every mode) and then
// hands the call to the active mode. Only the eager mode exists in runtime/; the recorder
// installs itself as a ModeHandler per thread, so the eager path pays one predictable branch.
#pragma once
#include <algorithm>
#include <span>

#include "runtime/attrs.h"
#include "runtime/eager_lane.h"
#include "runtime/op_call.h"
#include "runtime/op_list.h"
#include "runtime/tensor.h"

namespace kiln {

// Decides the output's metadata of a call, or raises kiln::Error. A pure function of the call's
// attributes and its inputs' sizes, strides, dtypes and devices (never of their values or
// offsets, except a view's offset): the same metadata and attributes give the same result, which
// the recorder (ModeHandler::known_meta) and the eager lane (runtime/lane_meta_memo.h) reuse.
using MetaFn = void (*)(const OpCall& call, OutputMeta& out);
// Writes the op's result into `out`, which the dispatcher allocated from the meta (row-major),
// or, for ops flagged kWritesAnyLayout, which may be any strided destination of the meta dtype.
using EagerFn = void (*)(const OpCall& call, const Tensor& out);

enum OpFlags : uint32_t {
  kNoFlags = 0,
  kIsView = 1u << 0,           // output aliases input 0's storage; meta gives strides/offset
  kWritesAnyLayout = 1u << 1,  // elementwise kernel: may write into any strided `out` directly
  kIsRandom = 1u << 2,         // consumes Philox offsets (ops/random.h documents how many)
  kChecksData = 1u << 3,       // the kernel validates data (index ranges): when recorded, the
                               // node runs even if its result is dead, so that the error
                               // still surfaces (at the next sync point)
  kHigherOrder = 1u << 4,      // a graph node with bodies (cond, loops, calls) or one of its
                               // results (tuple_get): run by the tracer, never dispatched
};

// What a backward rule sees (runtime/autograd/op_node.cpp builds it).
struct InputInfo {
  DimVector sizes;
  DType dtype;
};
struct BackwardCall {
  OpId op;
  const Attrs& attrs;
  std::span<const Tensor> inputs;         // saved inputs (undefined unless the rule saves them)
  std::span<const InputInfo> input_info;  // sizes and dtype of every input
  const Tensor& output;                   // the saved output (undefined unless saved)
  const Tensor& grad;                     // gradient of the output
  uint32_t needs;                         // bit i set: input i needs a gradient
  bool needs_input(size_t i) const { return (needs >> i) & 1u; }
};
// Writes grad_inputs[i] for each input that needs it, using kiln ops only (so that the tracer
// records backward passes like any other code).
using BackwardFn = void (*)(const BackwardCall& call, std::span<Tensor> grad_inputs);

// Which tensors a backward rule needs saved: bit i for input i, kSaveOutput for the output.
constexpr uint32_t save_input(int i) { return 1u << i; }
inline constexpr uint32_t kSaveOutput = 1u << 31;

struct OpDef {
  const char* name = nullptr;
  MetaFn meta = nullptr;
  EagerFn eager = nullptr;
  uint32_t flags = kNoFlags;
  BackwardFn backward = nullptr;  // null: not differentiable (an error if a gradient reaches it)
  uint32_t saves = 0;
};

// Registers the definition of one op (called by ops/ at init; see runtime/init.h).
void register_op(OpId id, const OpDef& def);
// Attaches a backward rule to a registered op (ops/*_backward.cpp).
void set_backward(OpId id, BackwardFn fn, uint32_t saves);
const OpDef& op_def(OpId id);

// The per-device execution seam. An op's OpDef::eager is its CPU kernel; its kernel for another
// device type is registered here by the layer that makes it (jit/cuda, from kiln::init()), so
// ops/ never names a device. run_eager and run_eager_into pick the kernel of the output's device;
// an op without one for that device raises kiln::Error naming the op and the device.
void register_device_kernel(OpId id, Device::Type type, EagerFn fn);
// The kernel of `id` for device `d` (def.eager for the CPU); raises when there is none.
EagerFn device_kernel(const OpDef& def, OpId id, Device d);

// A mode other than eager (the recorder, a speculation) handles calls on this thread while
// installed. It receives the call after the meta function accepted it.
class ModeHandler {
 public:
  virtual ~ModeHandler() = default;
  // The op's output metadata where the handler knows it without the meta function: the recorder
  // while the op repeats a node of a remembered recording with the same input values, input
  // metadata and attributes (tracer/segment.h). The dispatcher then skips the meta function:
  // the same inputs' metadata and attributes give the same result, and passed its checks before.
  virtual bool known_meta(const OpDef& def, const OpCall& call, OutputMeta& meta) {
    (void)def, (void)call, (void)meta;
    return false;
  }
  virtual Tensor handle(const OpDef& def, const OpCall& call, OutputMeta& meta) = 0;
  // Ops the handler lets run eagerly without calling it (runtime/eager_lane.h): while open, the
  // dispatcher runs a CPU op that take() admits as eager mode does (meta function, kernel).
  EagerLane eager_lane;
  // The in-place form: the result must end up written into `out` (whose version it bumps).
  virtual void handle_into(const OpDef& def, const OpCall& call, OutputMeta& meta, Tensor& out) = 0;
};
ModeHandler* current_mode();
void set_current_mode(ModeHandler* handler);  // nullptr returns to eager

// Forces eager execution on this thread while alive, whatever config().jit says: the recorder's
// interpreter and the JIT's compile thread run kernels, and kernels may dispatch ops of their own.
class EagerModeGuard {
 public:
  EagerModeGuard();
  ~EagerModeGuard();
  EagerModeGuard(const EagerModeGuard&) = delete;
  EagerModeGuard& operator=(const EagerModeGuard&) = delete;

 private:
  ModeHandler* saved_;
};

// The mode a thread gets when config().jit is on and it has none installed: the recorder, which
// the tracer registers in kiln::init() (it installs itself with set_current_mode and returns
// itself, or returns null to stay eager).
using RecordingModeFn = ModeHandler* (*)();
void set_recording_mode_provider(RecordingModeFn fn);

// Runs one op and returns its output.
Tensor dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs);
// Runs one op and writes its output into `out` (an in-place op when `out` is also an input):
// the result must have out's shape and be castable to out's dtype (PyTorch's rule).
void dispatch_into(OpId id, std::span<const Tensor> inputs, const Attrs& attrs, Tensor& out);

// An op's work for the eager tier: the element count of the largest tensor it reads or writes.
inline int64_t op_work(const OpCall& call, const OutputMeta& meta) {
  int64_t work = 1;
  for (int64_t s : meta.sizes) work *= s;
  for (const Tensor& t : call.inputs)  // defined: the dispatcher checked
    work = std::max(work, t.impl()->numel());
  return work;
}

// Runs an op eagerly on materialized inputs (the eager mode, and the tracer's interpreter).
Tensor run_eager(const OpDef& def, const OpCall& call, const OutputMeta& meta);

// Writes an op's result into `out` eagerly (the in-place half of the eager mode; inputs and
// `out` materialized): directly when the kernel can, else through a temporary and a copy.
// Bumps out's version.
void run_eager_into(const OpDef& def, const OpCall& call, const OutputMeta& meta,
                    const Tensor& out);

// Allocates a row-major tensor (no initialisation).
Tensor empty_tensor(const DimVector& sizes, DType dtype, Device device);

}  // namespace kiln
