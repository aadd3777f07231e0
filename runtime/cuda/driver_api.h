// The subset of the CUDA driver API (cuda.h) that kiln calls, declared here so that CUDA is never
// needed to build kiln: the types are ABI-equal stand-ins (handles are opaque pointers, CUresult
// and the enums are ints) and each entry point is listed once, with its exported symbol name.
// cuda.h #defines many names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); dlsym needs the
// versioned one, so the list names it explicitly. When the toolkit's headers are present at build
// time, runtime/cuda/abi_check.cpp checks every signature and constant against cuda.h.
//
// KILN_CUDA_PROBE_API: what is needed to say whether CUDA is usable and why not.
// KILN_CUDA_DRIVER_API: everything else kiln needs (contexts, memory, copies, streams, events,
// modules, launches). X(member, symbol, return type, (parameter types)).
#pragma once
#include <cstddef>

namespace kiln::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;

inline constexpr CUresult kCudaSuccess = 0;          // CUDA_SUCCESS
inline constexpr CUresult kCudaErrorNotReady = 600;  // CUDA_ERROR_NOT_READY
inline constexpr CUdevice_attribute kAttrMaxThreadsPerBlock = 1;
inline constexpr CUdevice_attribute kAttrMultiprocessorCount = 16;
inline constexpr CUdevice_attribute kAttrComputeCapabilityMajor = 75;
inline constexpr CUdevice_attribute kAttrComputeCapabilityMinor = 76;
inline constexpr CUdevice_attribute kAttrMaxSharedMemoryPerBlockOptin = 97;
inline constexpr CUfunction_attribute kFuncAttrMaxDynamicSharedSizeBytes = 8;
inline constexpr unsigned kStreamNonBlocking = 0x1;     // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDisableTiming = 0x2;    // CU_EVENT_DISABLE_TIMING
inline constexpr unsigned kMemHostAllocPortable = 0x1;  // CU_MEMHOSTALLOC_PORTABLE

}  // namespace kiln::cuda

#define KILN_CUDA_PROBE_API(X)                                              \
  X(cuInit, cuInit, CUresult, (unsigned int))                               \
  X(cuDriverGetVersion, cuDriverGetVersion, CUresult, (int*))               \
  X(cuGetErrorName, cuGetErrorName, CUresult, (CUresult, const char**))     \
  X(cuGetErrorString, cuGetErrorString, CUresult, (CUresult, const char**)) \
  X(cuDeviceGetCount, cuDeviceGetCount, CUresult, (int*))

#define KILN_CUDA_DRIVER_API(X)                                                                 \
  X(cuDeviceGet, cuDeviceGet, CUresult, (CUdevice*, int))                                       \
  X(cuDeviceGetName, cuDeviceGetName, CUresult, (char*, int, CUdevice))                         \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, CUresult, (int*, CUdevice_attribute, CUdevice)) \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, CUresult, (size_t*, CUdevice))                       \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, CUresult, (CUcontext*, CUdevice))       \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice))              \
  X(cuCtxSetCurrent, cuCtxSetCurrent, CUresult, (CUcontext))                                    \
  X(cuCtxGetCurrent, cuCtxGetCurrent, CUresult, (CUcontext*))                                   \
  X(cuCtxSynchronize, cuCtxSynchronize, CUresult, ())                                           \
  X(cuMemGetInfo, cuMemGetInfo_v2, CUresult, (size_t*, size_t*))                                \
  X(cuMemAlloc, cuMemAlloc_v2, CUresult, (CUdeviceptr*, size_t))                                \
  X(cuMemFree, cuMemFree_v2, CUresult, (CUdeviceptr))                                           \
  X(cuMemAllocAsync, cuMemAllocAsync, CUresult, (CUdeviceptr*, size_t, CUstream))               \
  X(cuMemFreeAsync, cuMemFreeAsync, CUresult, (CUdeviceptr, CUstream))                          \
  X(cuMemHostAlloc, cuMemHostAlloc, CUresult, (void**, size_t, unsigned int))                   \
  X(cuMemFreeHost, cuMemFreeHost, CUresult, (void*))                                            \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, CUresult,                                          \
    (CUdeviceptr, const void*, size_t, CUstream))                                               \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, CUresult, (void*, CUdeviceptr, size_t, CUstream))  \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, CUresult,                                          \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                               \
  X(cuMemsetD8Async, cuMemsetD8Async, CUresult, (CUdeviceptr, unsigned char, size_t, CUstream)) \
  X(cuStreamCreate, cuStreamCreate, CUresult, (CUstream*, unsigned int))                        \
  X(cuStreamDestroy, cuStreamDestroy_v2, CUresult, (CUstream))                                  \
  X(cuStreamSynchronize, cuStreamSynchronize, CUresult, (CUstream))                             \
  X(cuStreamQuery, cuStreamQuery, CUresult, (CUstream))                                         \
  X(cuStreamWaitEvent, cuStreamWaitEvent, CUresult, (CUstream, CUevent, unsigned int))          \
  X(cuEventCreate, cuEventCreate, CUresult, (CUevent*, unsigned int))                           \
  X(cuEventRecord, cuEventRecord, CUresult, (CUevent, CUstream))                                \
  X(cuEventQuery, cuEventQuery, CUresult, (CUevent))                                            \
  X(cuEventSynchronize, cuEventSynchronize, CUresult, (CUevent))                                \
  X(cuEventDestroy, cuEventDestroy_v2, CUresult, (CUevent))                                     \
  X(cuModuleLoadData, cuModuleLoadData, CUresult, (CUmodule*, const void*))                     \
  X(cuModuleUnload, cuModuleUnload, CUresult, (CUmodule))                                       \
  X(cuModuleGetFunction, cuModuleGetFunction, CUresult, (CUfunction*, CUmodule, const char*))   \
  X(cuFuncSetAttribute, cuFuncSetAttribute, CUresult, (CUfunction, CUfunction_attribute, int))  \
  X(cuLaunchKernel, cuLaunchKernel, CUresult,                                                   \
    (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,          \
     unsigned int, unsigned int, CUstream, void**, void**))
