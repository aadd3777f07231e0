#include "jit/cuda/matmul_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <mutex>

#include "jit/cuda/compile.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

namespace drv = ::kiln::cuda;

constexpr unsigned kBlock = 256;

struct Types {
  const char* value;
  const char* acc;
};

Types types_of(DType dtype) {
  switch (dtype) {
    case DType::Int32:
      return {"int", "unsigned int"};
    case DType::Int64:
      return {"long long", "unsigned long long"};
    case DType::Float32:
      return {"float", "float"};
    case DType::Float64:
      return {"double", "double"};
    default:
      fail("matmul: no CUDA matmul kernel for {} (expected Int32, Int64, Float32 or Float64)",
           dtype);
  }
}

}  // namespace

std::string matmul_kernel_name(DType dtype) {
  return fmt::format("kiln_matmul_{}", dtype_name(dtype));
}

std::string matmul_kernel_source(DType dtype) {
  const Types t = types_of(dtype);
  // Header-free, as the loop kernels (render.cpp): NVRTC compiles it in tens of milliseconds.
  return fmt::format(
      R"(// kiln: naive matmul, one thread per output element (jit/cuda/matmul_kernel.h)
typedef {0} T;
typedef {1} Acc;
extern "C" __global__ void {2}(const T* A, const T* B, T* C, long long batches, long long M,
    long long N, long long K, long long sam, long long sak, long long sbk, long long sbn,
    long long batch_a, long long batch_b) {{
  const long long total = batches * M * N;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += step) {{
    const long long j = idx % N;
    const long long r = idx / N;
    const long long i = r % M;
    const long long bi = r / M;
    const T* a = A + bi * batch_a + i * sam;
    const T* b = B + bi * batch_b + j * sbn;
    Acc acc = 0;
    for (long long k = 0; k < K; ++k) acc += (Acc)a[k * sak] * (Acc)b[k * sbk];
    C[idx] = (T)acc;
  }}
}}
)",
      t.value, t.acc, matmul_kernel_name(dtype));
}

void launch_matmul_kernel(int device, DType dtype, const MatmulRun& run) {
  KILN_CHECK(device >= 0 && device < 64, "matmul: device index {} out of range", device);
  const int slot = static_cast<int>(dtype);
  static std::mutex mu;
  static std::array<std::array<drv::CUfunction, kNumDTypes>, 64> fns{};  // modules stay loaded
  const drv::DeviceContext& c = drv::make_current(device);
  drv::CUfunction fn = nullptr;
  {
    std::lock_guard lock(mu);
    fn = fns[device][slot];
    if (fn == nullptr) {
      const std::string name = matmul_kernel_name(dtype);
      const Cubin cubin = compile_cubin(matmul_kernel_source(dtype), name, c.sm);
      drv::CUmodule module = nullptr;
      drv::check(drv::driver().cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
      drv::check(drv::driver().cuModuleGetFunction(&fn, module, name.c_str()),
                 "cuModuleGetFunction");
      fns[device][slot] = fn;
    }
  }
  const int64_t total = run.batches * run.M * run.N;
  if (total == 0) return;
  auto ptr = [](const void* p) {
    return static_cast<drv::CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  };
  drv::CUdeviceptr a = ptr(run.a), b = ptr(run.b), cp = ptr(run.c);
  long long v[] = {run.batches, run.M,   run.N,   run.K,       run.sam,
                   run.sak,     run.sbk, run.sbn, run.batch_a, run.batch_b};
  void* params[] = {&a,    &b,    &cp,   &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]};
  const int64_t blocks =
      std::min<int64_t>((total + kBlock - 1) / kBlock, int64_t{c.multiprocessors} * 16);
  drv::check(drv::driver().cuLaunchKernel(fn, static_cast<unsigned>(blocks), 1, 1, kBlock, 1, 1, 0,
                                          c.stream, params, nullptr),
             "cuLaunchKernel (matmul)");
}

}  // namespace kiln::jit::cuda
