#include "jit/cuda/cuda_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <mutex>
#include <vector>

#include "jit/cuda/compile.h"
#include "jit/cuda/render.h"
#include "jit/loop/kernel_cache.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace kiln::jit::cuda {

namespace {

namespace drv = ::kiln::cuda;

constexpr unsigned kBlock = 256;

// Each param's value as the kernel reads it: Scalar::to in the param's type, as bits.
uint64_t param_word(const Scalar& s, DType t) {
  switch (t) {
    case DType::Float32:
      return std::bit_cast<uint32_t>(s.to<float>());
    case DType::Float64:
      return std::bit_cast<uint64_t>(s.to<double>());
    case DType::Int32:
      return static_cast<uint32_t>(s.to<int32_t>());
    default:
      return static_cast<uint64_t>(s.to<int64_t>());
  }
}

// Whether a launch may take the dense loop's vector form (render.cpp): rank 1 with a 32-bit count,
// every output and every input that does not broadcast (stride 0) contiguous, and its address
// aligned as kiln_pack4 of its type is (4 elements, at most 16 bytes).
bool vector_form_applies(const LoopKernel& k, int rank, int64_t n,
                         const SmallVector<char*, 8>& ptrs,
                         const std::vector<std::array<int64_t, 64>>& strides) {
  if (rank != 1 || n > int64_t{0x7fffffff}) return false;
  for (int j = 0; j < k.num_operands(); ++j) {
    const int64_t item = static_cast<int64_t>(itemsize(k.operand_dtype(j)));
    const uint64_t align = static_cast<uint64_t>(std::min<int64_t>(4 * item, 16));
    const int64_t stride = strides[static_cast<size_t>(j)][0];
    if (j >= k.num_outputs() && stride == 0) continue;
    if (stride != item || reinterpret_cast<uint64_t>(ptrs[j]) % align != 0) return false;
  }
  return true;
}

class CudaKernel final : public CompiledKernel {
 public:
  CudaKernel(LoopKernel k, int device, drv::CUmodule module, drv::CUfunction fn)
      : k_(std::move(k)), device_(device), module_(module), fn_(fn) {}
  const LoopKernel& source() const override { return k_; }

  void launch(const LaunchArgs& args) override {
    const int nops = k_.num_operands();
    KILN_CHECK(static_cast<int>(args.ptrs.size()) == nops &&
                   static_cast<int>(args.strides.size()) == nops &&
                   static_cast<int>(args.params.size()) == k_.num_params(),
               "cuda kernel: launched with {} pointers, {} stride lists and {} params; it has {} "
               "operands and {} params",
               args.ptrs.size(), args.strides.size(), args.params.size(), nops, k_.num_params());
    // Coalesce: drop size-1 dims, merge a dim into the next inner one where every operand
    // steps through both as through one.
    std::array<int64_t, 64> sizes{};
    std::vector<std::array<int64_t, 64>> strides(static_cast<size_t>(nops));
    int rank = 0;
    int64_t n = 1;
    for (size_t d = 0; d < args.sizes.size(); ++d) {
      const int64_t s = args.sizes[d];
      n *= s;
      if (s == 1) continue;
      bool merge = rank > 0;
      for (int j = 0; j < nops && merge; ++j)
        merge = strides[j][rank - 1] == args.strides[j][d] * s;
      if (merge) {
        sizes[rank - 1] *= s;
        for (int j = 0; j < nops; ++j) strides[j][rank - 1] = args.strides[j][d];
        continue;
      }
      KILN_CHECK(rank < kCudaMaxDims,
                 "cuda kernel: the launch has more than {} dims that cannot be merged (sizes {})",
                 kCudaMaxDims, shape_str(args.sizes));
      sizes[rank] = s;
      for (int j = 0; j < nops; ++j) strides[j][rank] = args.strides[j][d];
      ++rank;
    }
    if (n == 0) return;
    if (rank == 0) {
      rank = 1;
      sizes[0] = 1;
    }
    const CudaArgLayout layout{nops, k_.num_params()};
    std::vector<uint64_t> w(static_cast<size_t>(layout.words()), 0);
    w[CudaArgLayout::kCount] = static_cast<uint64_t>(n);
    w[CudaArgLayout::kRank] = static_cast<uint64_t>(rank);
    if (vector_form_applies(k_, rank, n, args.ptrs, strides))
      w[CudaArgLayout::kRank] |= CudaArgLayout::kVecFlag;
    for (int d = 0; d < rank; ++d) w[CudaArgLayout::kSizes + d] = static_cast<uint64_t>(sizes[d]);
    for (int j = 0; j < nops; ++j) {
      w[layout.ptr(j)] = reinterpret_cast<uint64_t>(args.ptrs[j]);
      for (int d = 0; d < rank; ++d) w[layout.stride(j, d)] = static_cast<uint64_t>(strides[j][d]);
    }
    for (int p = 0; p < k_.num_params(); ++p)
      w[layout.param(p)] = param_word(args.params[p], k_.params[p]);

    const drv::DeviceContext& c = drv::make_current(device_);
    // The dense loop (render.h): one block per 256 * 4 elements, no cap (each thread makes one
    // trip: on an H100 this moves ~7% more bytes per second than 8 blocks per SM looping, and
    // reaches PyTorch's elementwise kernels). The strided loop: at most 16 blocks per SM, looping.
    const bool dense = rank == 1 && n <= int64_t{0x7fffffff};
    const int64_t per_block = int64_t{kBlock} * (dense ? 4 : 1);
    const int64_t blocks =
        dense ? (n + per_block - 1) / per_block
              : std::min<int64_t>((n + per_block - 1) / per_block, int64_t{c.multiprocessors} * 16);
    void* params[] = {w.data()};
    drv::check(drv::driver().cuLaunchKernel(fn_, static_cast<unsigned>(blocks), 1, 1, kBlock, 1, 1,
                                            0, c.stream, params, nullptr),
               "cuLaunchKernel");
    cuda_jit_counters().launches.fetch_add(1, std::memory_order_relaxed);
  }

 private:
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
  // Not rendered for CUDA yet (docs/cuda.md): random numbers, row kernels.
  if (op == ExprOp::RandUniform || expr_is_reduce(op) || op == ExprOp::RowSize) return false;
  return expr_accepts(op, dtype);
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
