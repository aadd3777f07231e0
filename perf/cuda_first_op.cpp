// kiln-cuda-first-op: what a new process waits for before its first eager CUDA op has a result
// (issue 15's target: under 50 ms with a warm disk cache). Run it twice with the same
// KILN_CACHE_DIR: the first run fills the CUBIN cache (NVRTC), the second finds it warm.
// It prints, in milliseconds from main():
//   - device: the first device tensor (dlopen of libcuda, cuInit, the primary context, the stream,
//     the first allocation and a host-to-device copy): paid once per process whatever the cache;
//   - first op: gelu of that tensor, synced: the kernel from the cache (memory, disk) or NVRTC,
//     the module load and the launch;
//   - second op: another op (x * 2 + 1: two kernels), synced;
//   - steady: the first op again (kernel in the process's memory), synced;
// and where the kernels came from (the CUBIN cache's counters). Usage: kiln-cuda-first-op
#include <chrono>
#include <cstdio>

#include "jit/cuda/disk_cache.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  const auto t0 = std::chrono::steady_clock::now();
  if (!cuda_is_available()) {
    std::fprintf(stderr, "kiln-cuda-first-op: CUDA is not available: %s\n",
                 cuda_unavailable_reason().c_str());
    return 2;
  }
  try {
    const Tensor host = arange(0, 4096, 1, TensorOptions().dtype(DType::Float32)) / 512.0 - 4.0;
    const double t_start = ms_since(t0);
    Tensor x = host.to(Device::cuda(0));
    kiln::sync();
    const double t_device = ms_since(t0);
    Tensor y = gelu(x);
    kiln::sync();
    const double t_first = ms_since(t0);
    Tensor z = x * 2.0 + 1.0;
    kiln::sync();
    const double t_second = ms_since(t0);
    Tensor w = gelu(x);
    kiln::sync();
    const double t_steady = ms_since(t0);
    KILN_CHECK(allclose(y.to(Device::cpu()), gelu(host), 1e-5, 1e-6), "gelu on CUDA differs");
    KILN_CHECK(equal(z.to(Device::cpu()), host * 2.0 + 1.0), "x * 2 + 1 on CUDA differs");
    const auto s = jit::cuda::cubin_cache().stats();
    std::printf("cache folder: %s\n", jit::cuda::cubin_cache().folder().c_str());
    std::printf("kernels: %llu from memory, %llu from disk, %llu compiled by NVRTC\n",
                static_cast<unsigned long long>(s.memory_hits),
                static_cast<unsigned long long>(s.disk_hits),
                static_cast<unsigned long long>(s.misses));
    std::printf("process start to init + host input: %8.2f ms\n", t_start);
    std::printf("first device tensor:                %8.2f ms\n", t_device - t_start);
    std::printf("first op (gelu), synced:            %8.2f ms\n", t_first - t_device);
    std::printf("second op (x * 2 + 1), synced:      %8.2f ms\n", t_second - t_first);
    std::printf("first op again, synced:             %8.2f ms\n", t_steady - t_second);
  } catch (const Error& e) {
    std::fprintf(stderr, "kiln-cuda-first-op: %s\n", e.what());
    return 1;
  }
  return 0;
}
