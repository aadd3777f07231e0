// A stand-in libcuda.so for the driver-loading tests (test_cuda_driver.cpp), so that the paths a
// machine without a GPU never takes are tested there too. It exports every entry point kiln
// resolves. The probe functions behave as the environment says, read at each call:
//   KILN_FAKE_CUDA_INIT_ERROR=N  cuInit returns CUresult N (default 0: success)
//   KILN_FAKE_CUDA_DEVICES=N     cuDeviceGetCount reports N devices (default 0)
// Every other entry point returns CUDA_ERROR_UNKNOWN (999): nothing may run on this "driver".
#include <cstdlib>

#include "runtime/cuda/driver_api.h"

using namespace kiln::cuda;

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : 0;
}
}  // namespace

#define KILN_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

KILN_FAKE_EXPORT CUresult cuInit(unsigned int) { return env_int("KILN_FAKE_CUDA_INIT_ERROR"); }
KILN_FAKE_EXPORT CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}
KILN_FAKE_EXPORT CUresult cuGetErrorName(CUresult r, const char** s) {
  *s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_FAKE";
  return 0;
}
KILN_FAKE_EXPORT CUresult cuGetErrorString(CUresult, const char** s) {
  *s = "reported by the fake driver";
  return 0;
}
KILN_FAKE_EXPORT CUresult cuDeviceGetCount(int* n) {
  *n = env_int("KILN_FAKE_CUDA_DEVICES");
  return 0;
}

#define KILN_FAKE_STUB(member, symbol, ret, params) \
  KILN_FAKE_EXPORT ret symbol params { return 999; }
KILN_CUDA_DRIVER_API(KILN_FAKE_STUB)
