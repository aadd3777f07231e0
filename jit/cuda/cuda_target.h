// The CUDA kernel target (jit/target.h): loop kernels rendered to CUDA C++ (render.h), compiled
// by NVRTC to a CUBIN for the device's own architecture through the CUBIN cache (compile.h),
// loaded into the device's context and launched on its stream. A launch coalesces dims (a dense
// or broadcast operand of any rank becomes rank 1), fills the argument words (CudaArgLayout) and
// queues the kernel: it returns before the kernel runs; errors surface at the next sync point.
//
// One target per device; compiled kernels are cached per target by the loop kernel's canonical
// encoding, so each distinct kernel is rendered, compiled (or read from disk) and loaded once
// per process and device.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "jit/target.h"

namespace kiln::jit::cuda {

struct CudaJitCounters {
  std::atomic<int64_t> kernels{0};     // kernels compiled or read from the cache, and loaded
  std::atomic<int64_t> compile_ns{0};  // time spent doing so
  std::atomic<int64_t> launches{0};
};
CudaJitCounters& cuda_jit_counters();

class CudaTarget final : public KernelTarget {
 public:
  explicit CudaTarget(int device);
  ~CudaTarget() override;
  const char* name() const override { return name_; }
  int threshold() const override { return 1; }
  bool supports(ExprOp op, DType dtype) const override;
  // The compiled kernel of `k` for this device, from the target's cache or made now.
  std::shared_ptr<CompiledKernel> compile(const LoopKernel& k) override;
  int device() const { return device_; }

 private:
  struct State;
  int device_;
  char name_[32];
  std::unique_ptr<State> state_;
};

// The target of CUDA device `index` (created on first use).
CudaTarget& cuda_target(int index);

}  // namespace kiln::jit::cuda
