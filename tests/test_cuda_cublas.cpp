// cuBLAS loading and kiln's own matmul kernel, without a GPU (CI): libcublas found and every
// entry point resolved when the toolkit is installed, a missing or foreign library reported by
// name, cuBLAS statuses turned into text, a handle refused with the device's reason where CUDA is
// not usable, and the NVRTC matmul kernel (integer matmul on CUDA) compiled for sm_90 for every
// dtype it serves. The declarations themselves are checked against cublas_api.h at build time
// (runtime/cuda/abi_check.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cuda_test_util.h"
#include "expect_error.h"
#include "jit/cuda/matmul_kernel.h"
#include "jit/cuda/nvrtc.h"
#include "kiln/kiln.h"
#include "runtime/cuda/cublas_library.h"

namespace kiln {
namespace {

using testing::expect_error;

TEST(CudaCublas, ToolkitLibraryLoadsWithEveryEntryPoint) {
  const cuda::CublasStatus& st = cuda::cublas_status();
  if (!st.usable) GTEST_SKIP() << "no libcublas here: " << st.reason;
  std::printf("cuBLAS %s from %s\n", st.version().c_str(), st.path.c_str());
  EXPECT_TRUE(st.reason.empty());
  EXPECT_GE(st.major, 12);  // kiln tries libcublas.so.13 and .12
  EXPECT_NE(st.path.find("libcublas"), std::string::npos) << st.path;
  const cuda::Cublas& api = cuda::cublas();
#define KILN_EXPECT_RESOLVED(member, symbol, ret, params) \
  EXPECT_NE(reinterpret_cast<void*>(api.member), nullptr) << #symbol;
  KILN_CUBLAS_API(KILN_EXPECT_RESOLVED)
#undef KILN_EXPECT_RESOLVED
  // The library's own strings (CUBLAS_STATUS_INVALID_VALUE is 7).
  EXPECT_EQ(cuda::cublas_error_text(api, 7).rfind("CUBLAS_STATUS_INVALID_VALUE", 0), 0u)
      << cuda::cublas_error_text(api, 7);
  expect_error([&] { cuda::check_cublas(7, "cublasSgemm"); }, "cublasSgemm failed",
               "CUBLAS_STATUS_INVALID_VALUE");
  cuda::check_cublas(cuda::kCublasSuccess, "nothing");  // success does not raise
}

TEST(CudaCublas, MissingOrForeignLibraryIsReportedByName) {
  const char* missing[] = {"libkiln-no-such-cublas.so.99", "/nonexistent/libcublas.so.13"};
  cuda::LoadedCublas none = cuda::load_cublas(missing);
  EXPECT_FALSE(none.status.usable);
  EXPECT_EQ(none.status.reason.rfind("no libcublas (", 0), 0u) << none.status.reason;
  EXPECT_NE(none.status.reason.find("libkiln-no-such-cublas.so.99"), std::string::npos);
  EXPECT_NE(none.status.reason.find("/nonexistent/libcublas.so.13"), std::string::npos);
  // A library that loads but is not cuBLAS: the first missing entry point is named.
  const char* foreign[] = {"libm.so.6"};
  cuda::LoadedCublas libm = cuda::load_cublas(foreign);
  EXPECT_FALSE(libm.status.usable);
  EXPECT_NE(libm.status.reason.find("lacks cublasGetProperty"), std::string::npos)
      << libm.status.reason;
  // Statuses without the library's strings still say which status it was.
  EXPECT_EQ(cuda::cublas_error_text(cuda::Cublas{}, 13), "cuBLAS status 13");
}

TEST(CudaCublas, HandleAndMatmulNeedAUsableDevice) {
  if (cuda_is_available()) GTEST_SKIP() << "a GPU is present (tests/test_cuda_matmul.cpp runs)";
  expect_error([] { cuda::cublas_handle(0); }, "device cuda:0 is not available",
               cuda_unavailable_reason());
  // No CUDA tensor can be made, so matmul never reaches cuBLAS: the factory says why.
  expect_error(
      [] {
        matmul(ones({2, 2}, TensorOptions().device(Device::cuda())), ones({2, 2}));
      },
      "device cuda:0 is not available");
}

TEST(CudaCublas, MatmulKernelCompilesForSm90ForEveryDtype) {
  KILN_SKIP_WITHOUT_NVRTC();
  for (DType dt : {DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    const std::string name = jit::cuda::matmul_kernel_name(dt);
    const std::string src = jit::cuda::matmul_kernel_source(dt);
    EXPECT_EQ(src.find("#include"), std::string::npos) << "header-free: " << name;
    const std::vector<char> cubin =
        jit::cuda::nvrtc_compile(src, name, jit::cuda::nvrtc_options(90));
    ASSERT_GT(cubin.size(), 64u) << name;
    EXPECT_NE(std::search(cubin.begin(), cubin.end(), name.begin(), name.end()), cubin.end())
        << name << " is not in its CUBIN";
  }
  // Integers accumulate in the unsigned type (wrapping is defined, as the CPU's loop).
  EXPECT_NE(jit::cuda::matmul_kernel_source(DType::Int32).find("typedef unsigned int Acc"),
            std::string::npos);
  EXPECT_NE(jit::cuda::matmul_kernel_source(DType::Int64).find("typedef unsigned long long Acc"),
            std::string::npos);
  expect_error([] { jit::cuda::matmul_kernel_source(DType::Bool); }, "matmul",
               "no CUDA matmul kernel for Bool");
}

}  // namespace
}  // namespace kiln
