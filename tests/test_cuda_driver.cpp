// The CUDA driver and NVRTC loaded at run time: on a machine without a GPU (CI) CUDA is reported
// unavailable with the reason, and making a CUDA tensor raises an error that carries it; the
// other outcomes of loading (cuInit failing, no device, a usable driver) are driven through the
// toolkit's stub library and a fake libcuda (tests/cuda/fake_libcuda.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "expect_error.h"
#include "kiln/kiln.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/nvrtc_library.h"

namespace kiln {
namespace {

using testing::expect_error;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(CudaDriver, AvailabilityAgreesWithItsReason) {
  const std::string why = cuda_unavailable_reason();
  EXPECT_EQ(cuda_is_available(), why.empty()) << why;
  EXPECT_EQ(cuda_device_count() > 0, cuda_is_available());
  if (!cuda::driver_status().usable) {
    EXPECT_EQ(cuda_device_count(), 0);
    EXPECT_EQ(why, cuda::driver_status().reason);
    expect_error([] { cuda::driver(); }, "CUDA is not available", why);
  }
  std::printf("cuda_is_available() = %d: %s\n", int(cuda_is_available()),
              why.empty() ? "usable" : why.c_str());
}

// Without CUDA, every way to make a CUDA tensor names the op, the device and why it cannot be
// used; with it, a device index past the last one does (tests/test_cuda_ops.cpp covers the rest).
TEST(CudaDriver, CudaTensorsRaiseWithTheReason) {
  if (cuda_is_available()) {
    expect_error([] { zeros({2}, TensorOptions(Device::cuda(cuda_device_count()))); },
                 "is not available", "CUDA device(s)");
    return;
  }
  const std::string why = cuda_unavailable_reason();
  const TensorOptions on_gpu = TensorOptions(Device::cuda());
  expect_error([&] { zeros({2}, on_gpu); }, "zeros: device cuda:0 is not available", why);
  expect_error([&] { randn({2}, on_gpu); }, "randn: device cuda:0 is not available", why);
  expect_error([&] { arange(5, on_gpu); }, "arange: device cuda:0 is not available", why);
  expect_error([&] { full({2}, 1.0, on_gpu); }, "device cuda:0 is not available", why);
  expect_error([] { ones({2}).to(kCUDA); }, "to: device cuda:0 is not available", why);
}

TEST(CudaDriver, MissingLibraryMeansNoDriver) {
  const char* names[] = {"/nonexistent/libcuda.so.1"};
  cuda::LoadedDriver d = cuda::load_driver(names);
  EXPECT_FALSE(d.status.usable);
  EXPECT_TRUE(contains(d.status.reason, "no CUDA driver is installed")) << d.status.reason;
  EXPECT_TRUE(contains(d.status.reason, "/nonexistent/libcuda.so.1")) << d.status.reason;
  EXPECT_EQ(d.api.cuInit, nullptr);
}

// The toolkit's link-time stub exports every entry point but its cuInit always fails: the
// reason is cuInit's own message.
TEST(CudaDriver, StubLibraryFailsInCuInit) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  const char* names[] = {stub};
  cuda::LoadedDriver d = cuda::load_driver(names);
  EXPECT_FALSE(d.status.usable);
  EXPECT_TRUE(contains(d.status.reason, "cuInit failed")) << d.status.reason;
}

#ifdef KILN_FAKE_LIBCUDA
TEST(CudaDriver, FakeDriverReportsEachOutcome) {
  const char* names[] = {KILN_FAKE_LIBCUDA};
  if (!std::filesystem::exists(names[0]))
    GTEST_SKIP() << "the fake libcuda is not at " << names[0] << " (binary moved from its build)";
  {
    ScopedEnv e("KILN_FAKE_CUDA_INIT_ERROR", "100");
    cuda::LoadedDriver d = cuda::load_driver(names);
    EXPECT_FALSE(d.status.usable);
    EXPECT_TRUE(contains(d.status.reason, "cuInit failed: CUDA_ERROR_NO_DEVICE"))
        << d.status.reason;
    EXPECT_EQ(d.status.version, 13000);
  }
  {
    ScopedEnv e("KILN_FAKE_CUDA_DEVICES", "0");
    cuda::LoadedDriver d = cuda::load_driver(names);
    EXPECT_FALSE(d.status.usable);
    EXPECT_TRUE(contains(d.status.reason, "no CUDA device")) << d.status.reason;
    EXPECT_TRUE(contains(d.status.reason, "13.0")) << d.status.reason;
  }
  {
    ScopedEnv e("KILN_FAKE_CUDA_DEVICES", "2");
    cuda::LoadedDriver d = cuda::load_driver(names);
    EXPECT_TRUE(d.status.usable) << d.status.reason;
    EXPECT_EQ(d.status.device_count, 2);
    EXPECT_TRUE(contains(d.status.path, "kiln_fake_libcuda")) << d.status.path;
    // Every entry point was resolved (the fake's stubs answer CUDA_ERROR_UNKNOWN).
    ASSERT_NE(d.api.cuLaunchKernel, nullptr);
    ASSERT_NE(d.api.cuMemcpyDtoHAsync, nullptr);
    EXPECT_EQ(d.api.cuMemFree(0), 999);
    EXPECT_EQ(cuda::error_text(d.api, 100), "CUDA_ERROR_NO_DEVICE (reported by the fake driver)");
  }
}
#endif

TEST(CudaDriver, VersionString) {
  EXPECT_EQ(cuda::version_string(13000), "13.0");
  EXPECT_EQ(cuda::version_string(12080), "12.8");
}

TEST(CudaDriver, NvrtcStatusIsConsistent) {
  const auto& st = cuda::nvrtc_status();
  if (!st.usable) {
    EXPECT_FALSE(st.reason.empty());
    expect_error([] { cuda::nvrtc(); }, "NVRTC is not available", st.reason);
    GTEST_SKIP() << "libnvrtc is not available: " << st.reason;
  }
  EXPECT_GE(st.major, 11);
  EXPECT_GT(st.file_size, 0u);
  EXPECT_TRUE(contains(st.fingerprint(), st.version())) << st.fingerprint();
}

}  // namespace
}  // namespace kiln
