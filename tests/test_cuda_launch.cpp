// On a machine with a GPU: the whole chain this part of the backend provides, end to end. The
// driver's entry points, a kernel compiled by NVRTC for the device's own architecture (through the
// CUBIN cache), loaded from the CUBIN, launched on a stream, its result copied back. Skips
// itself, saying why, where CUDA is not available (CI).
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "jit/cuda/compile.h"
#include "kiln/kiln.h"
#include "runtime/cuda/driver.h"

namespace kiln {
namespace {

using cuda::check;

TEST(CudaLaunch, NvrtcKernelRunsOnTheDevice) {
  if (!cuda_is_available()) GTEST_SKIP() << "CUDA is not available: " << cuda_unavailable_reason();
  const cuda::Driver& d = cuda::driver();
  cuda::CUdevice dev = 0;
  check(d.cuDeviceGet(&dev, 0), "cuDeviceGet");
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName");
  int major = 0, minor = 0;
  check(d.cuDeviceGetAttribute(&major, cuda::kAttrComputeCapabilityMajor, dev), "attribute");
  check(d.cuDeviceGetAttribute(&minor, cuda::kAttrComputeCapabilityMinor, dev), "attribute");
  const int sm = major * 10 + minor;
  std::printf("device 0: %s, sm_%d, driver %s\n", name, sm,
              cuda::version_string(cuda::driver_status().version).c_str());

  cuda::CUcontext ctx = nullptr;
  check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

  testing::TempDir dir;
  jit::cuda::CubinDiskCache cache(dir.path());
  const char* src = R"(
extern "C" __global__ void axpb(float* x, float a, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + b;
}
)";
  const jit::cuda::Cubin cubin = jit::cuda::compile_cubin(src, "axpb", sm, cache);

  cuda::CUmodule mod = nullptr;
  cuda::CUfunction fn = nullptr;
  check(d.cuModuleLoadData(&mod, cubin.data()), "cuModuleLoadData");
  check(d.cuModuleGetFunction(&fn, mod, "axpb"), "cuModuleGetFunction");
  cuda::CUstream stream = nullptr;
  check(d.cuStreamCreate(&stream, cuda::kStreamNonBlocking), "cuStreamCreate");

  long long n = 1000003;
  std::vector<float> host(static_cast<size_t>(n));
  for (long long i = 0; i < n; ++i) host[size_t(i)] = float(i % 1000);
  float* pinned = nullptr;
  check(d.cuMemHostAlloc(reinterpret_cast<void**>(&pinned), size_t(n) * 4,
                         cuda::kMemHostAllocPortable),
        "cuMemHostAlloc");
  std::copy(host.begin(), host.end(), pinned);
  cuda::CUdeviceptr buf = 0;
  check(d.cuMemAlloc(&buf, size_t(n) * 4), "cuMemAlloc");
  check(d.cuMemcpyHtoDAsync(buf, pinned, size_t(n) * 4, stream), "cuMemcpyHtoDAsync");
  float a = 2.0f, b = 0.5f;
  void* args[] = {&buf, &a, &b, &n};
  const unsigned block = 256, grid = unsigned((n + block - 1) / block);
  check(d.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, args, nullptr), "cuLaunchKernel");
  check(d.cuMemcpyDtoHAsync(pinned, buf, size_t(n) * 4, stream), "cuMemcpyDtoHAsync");
  check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
  int wrong = 0;
  for (long long i = 0; i < n; ++i) wrong += pinned[i] != 2.0f * host[size_t(i)] + 0.5f;
  EXPECT_EQ(wrong, 0);

  check(d.cuMemFree(buf), "cuMemFree");
  check(d.cuMemFreeHost(pinned), "cuMemFreeHost");
  check(d.cuStreamDestroy(stream), "cuStreamDestroy");
  check(d.cuModuleUnload(mod), "cuModuleUnload");
  // A failing call raises kiln::Error with the driver's own name for the error.
  try {
    check(d.cuMemFree(0xdeadbeef000ull), "cuMemFree");
    ADD_FAILURE() << "freeing a bad pointer must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuMemFree failed: CUDA_ERROR_"), std::string::npos)
        << e.what();
  }
  check(d.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
}

}  // namespace
}  // namespace kiln
