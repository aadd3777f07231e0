// Build-time proof that kiln's own declarations of the driver, NVRTC and cuBLAS APIs
// (runtime/cuda/driver_api.h, nvrtc_api.h, cublas_api.h) match the toolkit's cuda.h, nvrtc.h and
// cublas_api.h (when that one is installed: KILN_CUBLAS_HEADERS=1): each entry point
// has the same signature as the versioned symbol kiln dlsym's, and each constant the same value.
// Compiled with the toolkit's headers when CMake finds them (KILN_CUDA_HEADERS=1); without them
// this file is empty and kiln still builds (CUDA is optional at build time).
#if KILN_CUDA_HEADERS
#include <cuda.h>
#include <nvrtc.h>

#include <type_traits>

#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/nvrtc_api.h"
#if KILN_CUBLAS_HEADERS
#include <cublas_api.h>

#include "runtime/cuda/cublas_api.h"
#endif

// The X lists are re-read outside kiln::cuda, where CUresult, CUdevice, ... name cuda.h's types.
namespace kiln_cuda_abi_check {
#define KILN_CHECK_SIGNATURE(member, symbol, ret, params)           \
  static_assert(std::is_same_v<decltype(&::symbol), ret(*) params>, \
                "kiln's declaration of " #symbol " differs from the toolkit's header");
KILN_CUDA_PROBE_API(KILN_CHECK_SIGNATURE)
KILN_CUDA_DRIVER_API(KILN_CHECK_SIGNATURE)
KILN_NVRTC_API(KILN_CHECK_SIGNATURE)
#undef KILN_CHECK_SIGNATURE

namespace k = kiln::cuda;
static_assert(sizeof(k::CUresult) == sizeof(::CUresult));
static_assert(std::is_same_v<k::CUdevice, ::CUdevice>);
static_assert(std::is_same_v<k::CUdeviceptr, ::CUdeviceptr>);
static_assert(sizeof(k::CUdevice_attribute) == sizeof(::CUdevice_attribute));
static_assert(sizeof(k::nvrtcResult) == sizeof(::nvrtcResult));
static_assert(k::kCudaSuccess == CUDA_SUCCESS);
static_assert(k::kCudaErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(k::kAttrMaxThreadsPerBlock == CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
static_assert(k::kAttrMultiprocessorCount == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(k::kAttrComputeCapabilityMajor == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(k::kAttrComputeCapabilityMinor == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(k::kAttrMaxSharedMemoryPerBlockOptin ==
              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
static_assert(k::kFuncAttrMaxDynamicSharedSizeBytes ==
              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
static_assert(k::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(k::kEventDisableTiming == CU_EVENT_DISABLE_TIMING);
static_assert(k::kMemHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE);
static_assert(k::kNvrtcSuccess == NVRTC_SUCCESS);

#if KILN_CUBLAS_HEADERS
// cuBLAS: the stream parameter is cudaStream_t, which is cuda.h's CUstream.
static_assert(std::is_same_v<::cudaStream_t, ::CUstream>);
#define KILN_CHECK_SIGNATURE(member, symbol, ret, params)           \
  static_assert(std::is_same_v<decltype(&::symbol), ret(*) params>, \
                "kiln's declaration of " #symbol " differs from the toolkit's header");
KILN_CUBLAS_API(KILN_CHECK_SIGNATURE)
#undef KILN_CHECK_SIGNATURE
static_assert(sizeof(k::cublasStatus_t) == sizeof(::cublasStatus_t));
static_assert(sizeof(k::cublasOperation_t) == sizeof(::cublasOperation_t));
static_assert(sizeof(k::cublasMath_t) == sizeof(::cublasMath_t));
static_assert(sizeof(k::libraryPropertyType) == sizeof(::libraryPropertyType));
static_assert(std::is_same_v<k::cublasHandle_t, ::cublasHandle_t>);
static_assert(k::kCublasSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(k::kCublasOpN == CUBLAS_OP_N);
static_assert(k::kCublasOpT == CUBLAS_OP_T);
static_assert(k::kCublasDefaultMath == CUBLAS_DEFAULT_MATH);
static_assert(k::kCublasPedanticMath == CUBLAS_PEDANTIC_MATH);
static_assert(k::kMajorVersion == MAJOR_VERSION);
static_assert(k::kMinorVersion == MINOR_VERSION);
static_assert(k::kPatchLevel == PATCH_LEVEL);
#endif
}  // namespace kiln_cuda_abi_check
#endif
