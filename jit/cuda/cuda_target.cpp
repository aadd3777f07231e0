#include "jit/cuda/cuda_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "jit/cuda/compile.h"
#include "jit/cuda/launch_words.h"
#include "jit/cuda/render.h"
#include "jit/loop/kernel_cache.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace kiln::jit::cuda {

namespace {

namespace drv = ::kiln::cuda;

class CudaKernel final : public CompiledKernel {
 public:
  CudaKernel(LoopKernel k, int device, drv::CUmodule module, drv::CUfunction fn)
      : k_(std::move(k)), device_(device), module_(module), fn_(fn) {}
  const LoopKernel& source() const override { return k_; }

  // Column kernels (LaunchArgs::inner_dims, loop_kernel.h) are not rendered for CUDA.
  bool can_launch(const LaunchArgs& args) const override { return args.inner_dims == 0; }

  void launch(const LaunchArgs& args) override {
    KILN_CHECK(args.inner_dims == 0, "cuda kernel: column kernels are not rendered for CUDA");
    CudaLaunch l = cuda_launch_words(k_, args);
    if (l.work == 0) return;
    const drv::DeviceContext& c = drv::make_current(device_);
    const int64_t cap = int64_t{c.multiprocessors} * 16;
    if (l.split_items == 0) {
      run(l, (l.work + l.per_block - 1) / l.per_block, l.capped ? cap : INT64_MAX, c);
      return;
    }
    // A split of long rows (launch_words.h): the (row, chunk) blocks write their lanes' values
    // into the scratch, then the rows combine them; the stream orders the two and the scratch's
    // reuse by the caching allocator.
    const Tensor scratch = empty_tensor({l.scratch_bytes}, DType::Bool, Device::cuda(device_));
    set_split_phase(l, k_, scratch.impl()->data(), 1);
    run(l, l.split_items, cap, c);
    set_split_phase(l, k_, scratch.impl()->data(), 2);
    run(l, l.work, cap, c);
  }

 private:
  void run(const CudaLaunch& l, int64_t blocks, int64_t cap, const drv::DeviceContext& c) {
    blocks = std::min(blocks, cap);
    void* params[] = {const_cast<uint64_t*>(l.words.data())};
    drv::check(drv::driver().cuLaunchKernel(fn_, static_cast<unsigned>(blocks), 1, 1,
                                            kCudaBlockThreads, 1, 1, 0, c.stream, params, nullptr),
               "cuLaunchKernel");
    cuda_jit_counters().launches.fetch_add(1, std::memory_order_relaxed);
  }

  LoopKernel k_;
  int device_;
  drv::CUmodule module_;  // kept loaded for the process, like the CPU's machine code
  drv::CUfunction fn_;
};

}  // namespace

CudaJitCounters& cuda_jit_counters() {
  static CudaJitCounters c;
  return c;
}

struct CudaTarget::State {
  KernelCache<std::shared_ptr<CompiledKernel>> cache;
};

CudaTarget::CudaTarget(int device) : device_(device), state_(std::make_unique<State>()) {
  const drv::DeviceContext& c = drv::device_context(device);
  fmt::format_to_n(name_, sizeof(name_) - 1, "cuda-sm{}", c.sm);
}

CudaTarget::~CudaTarget() = default;

bool CudaTarget::supports(ExprOp op, DType dtype) const {
  if (op == ExprOp::Cast || expr_is_compare(op)) return op == ExprOp::Cast || dtype != DType::Bool;
  if (op == ExprOp::RowSize) return is_floating(dtype);
  // ReduceFirst (the CPU's argmax/argmin) is not rendered for CUDA: its argmax forms reduce an
  // index input instead (reduce_ops.cpp).
  // ReduceArgMax / ReduceArgMin (the CPU's column argmax) likewise: CUDA renders no column
  // kernels.
  if (op == ExprOp::ReduceFirst || expr_is_arg_reduce(op)) return false;
  return expr_accepts(op, dtype);  // Reduce*: every number type (render_reduce.h)
}

std::shared_ptr<CompiledKernel> CudaTarget::compile(const LoopKernel& k) {
  return state_->cache.get_or_make(encode(k), [&]() -> std::shared_ptr<CompiledKernel> {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string name = fmt::format("kiln_{:016x}", hash_words(encode(k)));
    const RenderedCuda r = render_cuda_kernel(k, name);
    const drv::DeviceContext& c = drv::make_current(device_);
    const Cubin cubin = compile_cubin(r.source, r.name, c.sm);
    drv::CUmodule module = nullptr;
    drv::CUfunction fn = nullptr;
    drv::check(drv::driver().cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
    drv::check(drv::driver().cuModuleGetFunction(&fn, module, r.name.c_str()),
               "cuModuleGetFunction");
    auto& counters = cuda_jit_counters();
    counters.kernels.fetch_add(1, std::memory_order_relaxed);
    counters.compile_ns.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count(),
        std::memory_order_relaxed);
    return std::make_shared<CudaKernel>(k, device_, module, fn);
  });
}

CudaTarget& cuda_target(int index) {
  static std::mutex mu;
  static std::array<CudaTarget*, 64> targets{};  // never destroyed: kernels live for the process
  KILN_CHECK(index >= 0 && index < 64, "cuda: device index {} out of range", index);
  std::lock_guard lock(mu);
  if (targets[index] == nullptr) targets[index] = new CudaTarget(index);
  return *targets[index];
}

}  // namespace kiln::jit::cuda
