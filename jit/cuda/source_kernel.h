// Kernels kiln writes as CUDA C++ directly, for ops that are not pointwise over their output in
// the loop IR's sense (random ops with a transform, index ops that read an index, factories that
// read their position): each op renders its source per dtype (index_ops.cpp, random_ops.cpp),
// compiled here by compile_cubin (memory, disk cache, NVRTC) for the device's own sm_XX, loaded
// once per process, device and source, and launched on the device's stream.
//
// Contract of a source kernel: `extern "C" __global__ void <name>(const KilnArgs a)` where
// KilnArgs is `struct { kiln_u64 w[N]; }` (source_kernel_prelude() declares the types and the
// helpers), w[0] is the element count n, and a grid-stride loop covers [0, n). The launch uses
// 256-thread blocks, at most 16 per multiprocessor, and skips n == 0.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <tuple>

#include "runtime/dtype.h"
#include "runtime/scalar.h"
#include "runtime/tensor.h"

namespace kiln::jit::cuda {

// A rendered source kernel: its extern "C" name and its full source.
struct CudaSource {
  std::string name, source;
};

// Typedefs (kiln_u64, kiln_i64), KILN_INLINE, the out-of-line index split kiln_divmod, and
// kiln_report(err, op, value, dim, size): a kernel-side error into the device's error word
// (runtime/cuda/kernel_errors.h), first error wins.
const char* source_kernel_prelude();

// The C type a dtype is stored as in memory (Bool: unsigned char 0 / 1).
const char* cuda_storage_type(DType dtype);
// A value of `dtype` held in the argument word `word` (a Float32's or Int32's bits in the low
// half).
std::string cuda_word_value(DType dtype, const std::string& word);
// The argument word holding `value` converted to `dtype` as Scalar::to does.
uint64_t cuda_word_of(const Scalar& value, DType dtype);

// `struct KilnArgs { kiln_u64 w[words]; };` and the kernel's signature up to its opening brace.
std::string source_kernel_head(const std::string& name, int words);

// source_kernel_prelude() followed by source_kernel_head(name, words).
std::string source_kernel_begin(const std::string& name, int words);

// The opening of the grid-stride loop over i in [0, w[0]) (the caller closes its brace).
const char* grid_stride_loop();

// A tensor's data address as an argument word.
inline uint64_t address_word(const Tensor& t) {
  return reinterpret_cast<uint64_t>(t.impl()->data());
}

// The address of device `device`'s kernel error word (runtime/cuda/kernel_errors.h) for a kernel
// that may report a bad index, or the host runner's (below) while one is installed.
uint64_t source_kernel_error_word(int device);

// Runs source kernels on the host instead of a device: the CI test that compiles every source
// kernel as host C++ (tests/test_cuda_host_kernels.cpp) installs one and calls the CUDA op forms
// on CPU tensors. While installed, launch_source_kernel hands it the kernel and its words, and
// source_kernel_error_word returns its host error word. Programs never install one.
class SourceKernelHostRunner {
 public:
  virtual ~SourceKernelHostRunner() = default;
  virtual void run(const CudaSource& kernel, std::span<const uint64_t> words) = 0;
  virtual uint64_t* error_word() = 0;
};
// Installs `runner` (nullptr: none) for the process; returns the previous one.
SourceKernelHostRunner* set_source_kernel_host_runner(SourceKernelHostRunner* runner);

// `Render(args...)` rendered once per distinct args for the process (a source kernel's text
// depends only on its dtypes), so a launch does not format its source again.
template <auto Render, class... Args>
const CudaSource& rendered(Args... args) {
  static std::mutex mu;
  static std::map<std::tuple<Args...>, CudaSource> cache;  // nodes never move
  std::lock_guard lock(mu);
  auto it = cache.find(std::tuple{args...});
  if (it == cache.end()) it = cache.emplace(std::tuple{args...}, Render(args...)).first;
  return it->second;
}

// Compiles (or finds) the kernel `name` of `source` on CUDA device `device` and queues it over
// `words` (w[0] = element count) on the device's stream.
void launch_source_kernel(int device, const CudaSource& kernel, std::span<const uint64_t> words);

}  // namespace kiln::jit::cuda
