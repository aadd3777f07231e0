#include "runtime/dispatcher.h"

#include <array>
#include <atomic>
#include <cctype>
#include <string>

#include "runtime/autograd/record.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/init.h"
#include "runtime/lazy.h"
#include "runtime/profiler.h"

namespace kiln {

namespace {

std::array<OpDef, kNumOps>& op_table() {
  static std::array<OpDef, kNumOps> table{};
  return table;
}

// Kernels of non-CPU device types, by [device type - 1][op].
constexpr int kDeviceTypes = 1;  // CUDA
std::array<std::array<EagerFn, kNumOps>, kDeviceTypes>& device_table() {
  static std::array<std::array<EagerFn, kNumOps>, kDeviceTypes> table{};
  return table;
}

// A CPU kernel must never see device memory: an op whose meta put its result on the CPU while
// an input is elsewhere is refused here rather than crashing in the kernel.
[[gnu::noinline, noreturn]] void raise_mixed_devices(const OpDef& def, const OpCall& call) {
  std::string where;
  for (size_t i = 0; i < call.inputs.size(); ++i)
    where += fmt::format("{}input {} on {}", i ? ", " : "", i, call.inputs[i].impl()->device());
  fail("{}: expects its tensors on one device, got {} for a result on cpu", def.name, where);
}

inline EagerFn kernel_for(const OpDef& def, const OpCall& call, Device d) {
  if (d.is_cpu()) [[likely]] {
    for (const Tensor& t : call.inputs)
      if (!t.impl()->device().is_cpu()) [[unlikely]]
        raise_mixed_devices(def, call);
    return def.eager;
  }
  return device_kernel(def, call.op, d);
}

thread_local ModeHandler* tls_mode = nullptr;
std::atomic<RecordingModeFn> g_recording_mode{nullptr};

// The thread's mode: its installed handler, else the recorder when config().jit asks for one.
inline ModeHandler* active_mode() {
  ModeHandler* mode = tls_mode;
  if (mode == nullptr && config().jit) [[unlikely]] {
    if (RecordingModeFn fn = g_recording_mode.load(std::memory_order_acquire)) mode = fn();
  }
  return mode;
}

const char* const kOpIdNames[] = {
#define KILN_OP_NAME(name) #name,
    KILN_FOR_EACH_OP(KILN_OP_NAME)
#undef KILN_OP_NAME
};

// Messages name ops as users call them (add, log_softmax), not by their CamelCase ids.
std::string snake_case(const char* id) {
  std::string out;
  for (const char* c = id; *c; ++c) {
    if (std::isupper(static_cast<unsigned char>(*c))) {
      if (c != id) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    } else {
      out += *c;
    }
  }
  return out;
}

const std::array<std::string, kNumOps>& op_names() {
  static const std::array<std::string, kNumOps> names = [] {
    std::array<std::string, kNumOps> n;
    for (int i = 0; i < kNumOps; ++i) n[i] = snake_case(kOpIdNames[i]);
    return n;
  }();
  return names;
}

void check_defined(const char* name, std::span<const Tensor> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_CHECK(inputs[i].defined(), "{}: input {} is an undefined tensor", name, i);
  }
}

// True when writing `out` element by element could clobber an input element before it is read:
// the input shares out's storage with a different geometry.
bool overlaps_differently(const Tensor& out, std::span<const Tensor> inputs) {
  const TensorImpl* o = out.impl();
  for (const Tensor& in : inputs) {
    const TensorImpl* i = in.impl();
    if (i->storage() != o->storage()) continue;
    if (i->offset() != o->offset() || i->sizes() != o->sizes() || i->strides() != o->strides())
      return true;
  }
  return false;
}

void check_no_internal_overlap(const char* name, const Tensor& out) {
  const TensorImpl* o = out.impl();
  for (int64_t d = 0; d < o->dim(); ++d) {
    KILN_CHECK(o->strides()[d] != 0 || o->sizes()[d] <= 1,
               "{}: cannot write in place into a tensor of shape {} whose dim {} is expanded "
               "(several elements share one memory location); call .contiguous() or .clone() "
               "first",
               name, shape_str(o->sizes()), d);
  }
}

}  // namespace

const char* op_name(OpId id) { return op_names()[static_cast<int>(id)].c_str(); }
const char* op_id_name(OpId id) { return kOpIdNames[static_cast<int>(id)]; }

void register_op(OpId id, const OpDef& def) {
  OpDef& slot = op_table()[static_cast<int>(id)];
  BackwardFn bw = slot.backward;
  uint32_t saves = slot.saves;
  slot = def;
  if (!def.backward) {  // keep a rule attached before the op itself was registered
    slot.backward = bw;
    slot.saves = saves;
  }
}

void set_backward(OpId id, BackwardFn fn, uint32_t saves) {
  OpDef& slot = op_table()[static_cast<int>(id)];
  slot.backward = fn;
  slot.saves = saves;
}

const OpDef& op_def(OpId id) {
  ensure_initialized();
  const OpDef& def = op_table()[static_cast<int>(id)];
  KILN_CHECK(def.meta != nullptr, "{}: op has no registered definition", op_name(id));
  return def;
}

void register_device_kernel(OpId id, Device::Type type, EagerFn fn) {
  KILN_CHECK(type != Device::Type::CPU, "register_device_kernel: CPU kernels are OpDef::eager");
  device_table()[static_cast<int>(type) - 1][static_cast<int>(id)] = fn;
}

EagerFn device_kernel(const OpDef& def, OpId id, Device d) {
  if (d.is_cpu()) return def.eager;
  EagerFn fn = device_table()[static_cast<int>(d.type) - 1][static_cast<int>(id)];
  KILN_CHECK(fn != nullptr,
             "{}: not implemented for {} tensors (docs/cuda.md lists the ops kiln's CUDA backend "
             "runs so far); move the tensors to the CPU with .to(kCPU)",
             def.name, d);
  return fn;
}

ModeHandler* current_mode() { return tls_mode; }
void set_current_mode(ModeHandler* handler) { tls_mode = handler; }
namespace {
class EagerMode final : public ModeHandler {
 public:
  Tensor handle(const OpDef& def, const OpCall& call, OutputMeta& meta) override {
    return run_eager(def, call, meta);
  }
  void handle_into(const OpDef& def, const OpCall& call, OutputMeta& meta, Tensor& out) override {
    // Another thread's recording may still have to read the old contents.
    if (out.impl()->storage()->has_pending_readers()) [[unlikely]]
      before_write(out);
    run_eager_into(def, call, meta, out);
  }
};
EagerMode g_eager_mode;
}  // namespace

EagerModeGuard::EagerModeGuard() : saved_(tls_mode) { tls_mode = &g_eager_mode; }
EagerModeGuard::~EagerModeGuard() { tls_mode = saved_; }

void set_recording_mode_provider(RecordingModeFn fn) {
  g_recording_mode.store(fn, std::memory_order_release);
}

Tensor empty_tensor(const DimVector& sizes, DType dtype, Device device) {
  int64_t n = numel_of(sizes);
  size_t nbytes = 0;
  KILN_CHECK(!__builtin_mul_overflow(static_cast<size_t>(n), itemsize(dtype), &nbytes),
             "a {} tensor of shape {} is too large (its size in bytes overflows)", dtype,
             shape_str(sizes));
  auto storage = make_ref<Storage>(nbytes, device);
  return Tensor(make_ref<TensorImpl>(sizes, dtype, device, std::move(storage)));
}

Tensor run_eager(const OpDef& def, const OpCall& call, const OutputMeta& meta) {
  if (def.flags & kIsView) {
    const TensorImpl* base = call.inputs[0].impl();
    return Tensor(make_ref<TensorImpl>(meta.sizes, meta.strides, meta.offset, base->dtype(),
                                       base->device(), base->storage_ref()));
  }
  EagerFn fn = kernel_for(def, call, meta.device);
  Tensor out = empty_tensor(meta.sizes, meta.dtype, meta.device);
  if (out.impl()->numel() > 0) fn(call, out);
  return out;
}

namespace {

Tensor dispatch_impl(OpId id, std::span<const Tensor> inputs, const Attrs& attrs) {
  const OpDef& def = op_def(id);
  check_defined(def.name, inputs);
  OpCall call{id, inputs, attrs};
  OutputMeta meta;
  ModeHandler* mode = active_mode();
  // An open eager lane (runtime/eager_lane.h): the op runs as in eager mode unless the lane
  // turns it away, and then the mode decides (known_meta answers only for recorded ops).
  EagerLane* lane = mode != nullptr && mode->eager_lane.is_open() ? &mode->eager_lane : nullptr;
  // The lane's memo (runtime/lane_meta_memo.h) answers with its own entry: `m`, read by
  // run_eager before the kernel runs (a kernel's own ops may overwrite the entry).
  const OutputMeta* m = &meta;
  auto run_meta = [&] {
    def.meta(call, meta);
    check_shape_size(def.name, meta.sizes, meta.dtype, !(def.flags & kIsView));
  };
  if (lane != nullptr && !(def.flags & kIsView)) {
    m = lane->known_meta(call);
    if (m == nullptr) {
      run_meta();
      lane->remember_meta(call, meta);
      m = &meta;
    }
  } else if (mode == nullptr || lane != nullptr || !mode->known_meta(def, call, meta)) {
    run_meta();
  }
  Tensor out;
  if (mode == nullptr ||
      (lane != nullptr && m->device.is_cpu() && lane->take(id, op_work(call, *m)))) {
    out = run_eager(def, call, *m);
  } else {
    if (m != &meta) meta = *m;
    out = mode->handle(def, call, meta);
  }
  if (any_requires_grad(inputs)) [[unlikely]]
    record_autograd(def, call, out);
  return out;
}

void dispatch_into_impl(OpId id, std::span<const Tensor> inputs, const Attrs& attrs, Tensor& out) {
  const OpDef& def = op_def(id);
  KILN_CHECK(out.defined(), "{}: the output tensor is undefined", def.name);
  check_defined(def.name, inputs);
  OpCall call{id, inputs, attrs};
  OutputMeta meta;
  def.meta(call, meta);
  const TensorImpl* o = out.impl();
  KILN_CHECK(meta.sizes == o->sizes(),
             "{}: the result has shape {} but the output (written in place) has shape {}", def.name,
             shape_str(meta.sizes), shape_str(o->sizes()));
  // Copy casts to any dtype; other ops may not lower the category (PyTorch's can_cast).
  KILN_CHECK(id == OpId::Copy || category(meta.dtype) <= category(o->dtype()),
             "{}: result type {} can't be cast to the desired output type {}", def.name, meta.dtype,
             o->dtype());
  KILN_CHECK(meta.device == o->device(), "{}: the result is on {} but the output is on {}",
             def.name, meta.device, o->device());
  check_no_internal_overlap(def.name, out);

  if (any_requires_grad(inputs) || out.impl()->requires_grad()) [[unlikely]] {
    if (inplace_with_autograd(def, call, out)) return;
  }

  if (ModeHandler* mode = active_mode()) [[unlikely]] {
    mode->handle_into(def, call, meta, out);
    return;
  }
  g_eager_mode.handle_into(def, call, meta, out);  // final class: a direct call
}

}  // namespace

void run_eager_into(const OpDef& def, const OpCall& call, const OutputMeta& meta,
                    const Tensor& out) {
  const TensorImpl* o = out.impl();
  if (o->numel() > 0) {
    bool direct = (def.flags & kWritesAnyLayout) &&
                  (call.op == OpId::Copy || meta.dtype == o->dtype()) &&
                  !overlaps_differently(out, call.inputs);
    if (direct) {
      kernel_for(def, call, o->device())(call, out);
    } else {
      Tensor tmp = run_eager(def, call, meta);
      const Tensor src[] = {tmp};
      Attrs none;
      const OpCall copy{OpId::Copy, src, none};
      kernel_for(op_def(OpId::Copy), copy, o->device())(copy, out);
    }
  }
  o->storage()->bump_version();
}

namespace {

// Kept out of line so that, with the profiler off, dispatch() is a flag test and a tail call.
[[gnu::noinline]] Tensor dispatch_profiled(OpId id, std::span<const Tensor> inputs,
                                           const Attrs& attrs) {
  return profiler::time_op(id, [&] { return dispatch_impl(id, inputs, attrs); });
}
[[gnu::noinline]] void dispatch_into_profiled(OpId id, std::span<const Tensor> inputs,
                                              const Attrs& attrs, Tensor& out) {
  profiler::time_op(id, [&] { dispatch_into_impl(id, inputs, attrs, out); });
}

}  // namespace

// The profiler switch: one predictable branch per op when off (DESIGN.md, "The hot path").
Tensor dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs) {
  if (profiler::op_hook()) [[unlikely]]
    return dispatch_profiled(id, inputs, attrs);
  return dispatch_impl(id, inputs, attrs);
}

void dispatch_into(OpId id, std::span<const Tensor> inputs, const Attrs& attrs, Tensor& out) {
  if (profiler::op_hook()) [[unlikely]]
    return dispatch_into_profiled(id, inputs, attrs, out);
  dispatch_into_impl(id, inputs, attrs, out);
}

}  // namespace kiln
