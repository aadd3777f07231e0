#include "jit/cuda/source_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <map>
#include <mutex>
#include <utility>

#include "jit/cuda/compile.h"
#include "jit/cuda/cuda_target.h"
#include "jit/cuda/prelude_base.h"
#include "jit/cuda/render_expr.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/kernel_errors.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

namespace drv = ::kiln::cuda;

constexpr unsigned kBlock = 256;

// After prelude_base.h (types, the index split's division). kiln_report: atomicCAS claims word 0
// (op code + 1), then the winner writes the details; the host reads them after the stream is
// synchronized.
constexpr const char* kReportPrelude =
    R"(static __device__ __noinline__ void kiln_report(kiln_u64* err, kiln_u64 op, kiln_i64 value,
                                                kiln_i64 dim, kiln_i64 size) {
  if (atomicCAS(err, 0ull, op) == 0ull) {
    err[1] = (kiln_u64)value;
    err[2] = (kiln_u64)dim;
    err[3] = (kiln_u64)size;
    __threadfence_system();
  }
}
)";

std::atomic<SourceKernelHostRunner*> g_host_runner{nullptr};

struct Loaded {
  drv::CUmodule module = nullptr;
  drv::CUfunction fn = nullptr;
};

}  // namespace

const char* source_kernel_prelude() {
  static const std::string prelude = std::string(kCudaPreludeBase) + kReportPrelude;
  return prelude.c_str();
}

const char* cuda_storage_type(DType t) {
  return t == DType::Bool ? "unsigned char" : cuda_type(t);  // a Bool is one byte in memory
}

std::string cuda_word_value(DType t, const std::string& word) {
  switch (t) {
    case DType::Float32:
      return fmt::format("__int_as_float((int)(unsigned){})", word);
    case DType::Float64:
      return fmt::format("__longlong_as_double((kiln_i64){})", word);
    case DType::Int32:
      return fmt::format("(int)(unsigned){}", word);
    case DType::Int64:
      return fmt::format("(kiln_i64){}", word);
    default:
      return fmt::format("(unsigned char)({} != 0)", word);
  }
}

uint64_t cuda_word_of(const Scalar& s, DType t) {
  switch (t) {
    case DType::Float32:
      return std::bit_cast<uint32_t>(s.to<float>());
    case DType::Float64:
      return std::bit_cast<uint64_t>(s.to<double>());
    case DType::Int32:
      return static_cast<uint32_t>(s.to<int32_t>());
    case DType::Int64:
      return static_cast<uint64_t>(s.to<int64_t>());
    default:
      return s.to<bool>() ? 1 : 0;
  }
}

std::string source_kernel_head(const std::string& name, int words) {
  return fmt::format(
      "struct KilnArgs {{ kiln_u64 w[{}]; }};\n"
      "extern \"C\" __global__ void __launch_bounds__(256) {}(const KilnArgs a) {{\n",
      words, name);
}

std::string source_kernel_begin(const std::string& name, int words) {
  return std::string(source_kernel_prelude()) + source_kernel_head(name, words);
}

const char* grid_stride_loop() {
  return "  const kiln_i64 step = (kiln_i64)gridDim.x * blockDim.x;\n"
         "  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < "
         "(kiln_i64)a.w[0]; i += step) {\n";
}

SourceKernelHostRunner* set_source_kernel_host_runner(SourceKernelHostRunner* runner) {
  return g_host_runner.exchange(runner);
}

uint64_t source_kernel_error_word(int device) {
  if (SourceKernelHostRunner* r = g_host_runner.load()) [[unlikely]]
    return reinterpret_cast<uint64_t>(r->error_word());
  return ::kiln::cuda::kernel_error_word(device);
}

void launch_source_kernel(int device, const CudaSource& kernel, std::span<const uint64_t> words) {
  const std::string& name = kernel.name;
  const std::string& source = kernel.source;
  KILN_CHECK(!words.empty(), "cuda kernel {}: launched without its element count", name);
  const int64_t n = static_cast<int64_t>(words[0]);
  if (n == 0) return;
  if (SourceKernelHostRunner* r = g_host_runner.load()) [[unlikely]] {
    r->run(kernel, words);
    return;
  }
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, Loaded> loaded;  // kept for the process
  const drv::DeviceContext& c = drv::make_current(device);
  Loaded fn;
  {
    std::lock_guard lock(mu);
    auto it = loaded.find({device, source});
    if (it == loaded.end()) {
      const Cubin cubin = compile_cubin(source, name, c.sm);
      Loaded l;
      drv::check(drv::driver().cuModuleLoadData(&l.module, cubin.data()), "cuModuleLoadData");
      drv::check(drv::driver().cuModuleGetFunction(&l.fn, l.module, name.c_str()),
                 "cuModuleGetFunction");
      it = loaded.emplace(std::pair{device, source}, l).first;
      cuda_jit_counters().kernels.fetch_add(1, std::memory_order_relaxed);
    }
    fn = it->second;
  }
  const int64_t blocks =
      std::min<int64_t>((n + kBlock - 1) / kBlock, int64_t{c.multiprocessors} * 16);
  void* params[] = {const_cast<uint64_t*>(words.data())};
  drv::check(drv::driver().cuLaunchKernel(fn.fn, static_cast<unsigned>(blocks), 1, 1, kBlock, 1, 1,
                                          0, c.stream, params, nullptr),
             "cuLaunchKernel");
  cuda_jit_counters().launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace kiln::jit::cuda
