// The subset of NVRTC (nvrtc.h) that kiln calls, declared here so that CUDA is never needed to
// build kiln (see runtime/cuda/driver_api.h; runtime/cuda/abi_check.cpp checks these against
// nvrtc.h when the toolkit is present). X(member, symbol, return type, (parameter types)).
#pragma once
#include <cstddef>

namespace kiln::cuda {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
inline constexpr nvrtcResult kNvrtcSuccess = 0;  // NVRTC_SUCCESS

}  // namespace kiln::cuda

#define KILN_NVRTC_API(X)                                                                   \
  X(nvrtcVersion, nvrtcVersion, nvrtcResult, (int*, int*))                                  \
  X(nvrtcGetErrorString, nvrtcGetErrorString, const char*, (nvrtcResult))                   \
  X(nvrtcGetNumSupportedArchs, nvrtcGetNumSupportedArchs, nvrtcResult, (int*))              \
  X(nvrtcGetSupportedArchs, nvrtcGetSupportedArchs, nvrtcResult, (int*))                    \
  X(nvrtcCreateProgram, nvrtcCreateProgram, nvrtcResult,                                    \
    (nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*)) \
  X(nvrtcDestroyProgram, nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram*))                 \
  X(nvrtcCompileProgram, nvrtcCompileProgram, nvrtcResult,                                  \
    (nvrtcProgram, int, const char* const*))                                                \
  X(nvrtcGetProgramLogSize, nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t*))   \
  X(nvrtcGetProgramLog, nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char*))             \
  X(nvrtcGetCUBINSize, nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram, size_t*))             \
  X(nvrtcGetCUBIN, nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram, char*))                       \
  X(nvrtcGetPTXSize, nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram, size_t*))                 \
  X(nvrtcGetPTX, nvrtcGetPTX, nvrtcResult, (nvrtcProgram, char*))
