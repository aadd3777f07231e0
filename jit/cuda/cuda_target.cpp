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

// The launch's dims after coalescing: size-1 dims dropped, a dim merged into the next inner one
// where every operand steps through both as through one. At most kCudaMaxDims remain.
struct Coalesced {
  explicit Coalesced(int nops) : strides(static_cast<size_t>(nops)) {}
  std::array<int64_t, kCudaMaxDims> sizes{};
  std::vector<std::array<int64_t, kCudaMaxDims>> strides;
  int rank = 0;

  // Appends dims [begin, end) of `a`, merged among themselves only; returns their element
  // count. `keep_one`: none left (all of size 1, or no dims) appends one dim of size 1.
  int64_t add(const LaunchArgs& a, size_t begin, size_t end, bool keep_one) {
    const int first = rank;
    int64_t n = 1;
    for (size_t d = begin; d < end; ++d) {
      const int64_t s = a.sizes[d];
      n *= s;
      if (s == 1) continue;
      bool merge = rank > first;
      for (size_t j = 0; j < strides.size() && merge; ++j)
        merge = strides[j][rank - 1] == a.strides[j][d] * s;
      if (merge) {
        sizes[rank - 1] *= s;
        for (size_t j = 0; j < strides.size(); ++j) strides[j][rank - 1] = a.strides[j][d];
        continue;
      }
      push(s, a, d);
    }
    if (rank == first && (keep_one || first == 0)) push(1, a, a.sizes.size());  // stride 0
    return n;
  }

 private:
  void push(int64_t size, const LaunchArgs& a, size_t d) {
    KILN_CHECK(rank < kCudaMaxDims,
               "cuda kernel: the launch has more than {} dims that cannot be merged (sizes {})",
               kCudaMaxDims, shape_str(a.sizes));
    sizes[rank] = size;
    for (size_t j = 0; j < strides.size(); ++j)
      strides[j][rank] = d < a.sizes.size() ? a.strides[j][d] : 0;
    ++rank;
  }
};

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
    const bool row_kernel = k_.has_reduce();
    const size_t total = args.sizes.size();
    KILN_CHECK(args.reduced_dims >= 0 && static_cast<size_t>(args.reduced_dims) <= total &&
                   (row_kernel || args.reduced_dims == 0),
               "cuda kernel: {} reduced dims of sizes {} ({})", args.reduced_dims,
               shape_str(args.sizes), row_kernel ? "a row kernel" : "a pointwise kernel");
    // A row kernel's rows' dims and row's dims coalesce apart; each keeps at least one dim.
    Coalesced c(nops);
    const size_t split = total - static_cast<size_t>(args.reduced_dims);
    const int64_t outer = c.add(args, 0, split, row_kernel);
    const int outer_rank = c.rank;
    const int64_t row_n = row_kernel ? c.add(args, split, total, true) : 0;
    const int row_rank = c.rank - outer_rank;
    if (outer == 0) return;
    const CudaArgLayout layout{nops, k_.num_params()};
    std::vector<uint64_t> w(static_cast<size_t>(layout.words()), 0);
    w[CudaArgLayout::kCount] = static_cast<uint64_t>(outer);
    w[CudaArgLayout::kRank] = static_cast<uint64_t>(outer_rank);
    w[CudaArgLayout::kRowLen] = static_cast<uint64_t>(row_n);
    w[CudaArgLayout::kRowRank] = static_cast<uint64_t>(row_rank);
    for (int d = 0; d < c.rank; ++d)
      w[CudaArgLayout::kSizes + d] = static_cast<uint64_t>(c.sizes[d]);
    for (int j = 0; j < nops; ++j) {
      w[layout.ptr(j)] = reinterpret_cast<uint64_t>(args.ptrs[j]);
      for (int d = 0; d < c.rank; ++d)
        w[layout.stride(j, d)] = static_cast<uint64_t>(c.strides[j][d]);
    }
    for (int p = 0; p < k_.num_params(); ++p)
      w[layout.param(p)] = param_word(args.params[p], k_.params[p]);

    const drv::DeviceContext& ctx = drv::make_current(device_);
    // Pointwise: one thread per element. Row kernels (render_reduce.h): a warp per row of at
    // most 2048 elements (8 rows per block), else a block per row.
    const int64_t per_block = !row_kernel ? kBlock : row_n <= 2048 ? kBlock / 32 : 1;
    const int64_t blocks =
        std::min<int64_t>((outer + per_block - 1) / per_block, int64_t{ctx.multiprocessors} * 16);
    void* params[] = {w.data()};
    drv::check(drv::driver().cuLaunchKernel(fn_, static_cast<unsigned>(blocks), 1, 1, kBlock, 1, 1,
                                            0, ctx.stream, params, nullptr),
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
  // Not rendered for CUDA yet (docs/cuda.md): random numbers.
  if (op == ExprOp::RandUniform) return false;
  if (op == ExprOp::RowSize) return is_floating(dtype);
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
