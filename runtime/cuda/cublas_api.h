// The subset of cuBLAS (cublas_api.h) that kiln calls, declared here so that CUDA is never needed
// to build kiln (as runtime/cuda/driver_api.h for the driver). Handles are opaque pointers, the
// enums ints; cudaStream_t is the driver's CUstream (the same type in the toolkit's headers).
// Each entry point is listed once with the symbol libcublas exports (cublas_v2.h #defines
// cublasCreate to cublasCreate_v2, ...). runtime/cuda/abi_check.cpp checks every signature and
// constant against cublas_api.h when the header is present at build time.
// X(member, symbol, return type, (parameter types)).
#pragma once
#include "runtime/cuda/driver_api.h"

namespace kiln::cuda {

using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext*;
using cublasOperation_t = int;
using cublasMath_t = int;
using libraryPropertyType = int;

inline constexpr cublasStatus_t kCublasSuccess = 0;      // CUBLAS_STATUS_SUCCESS
inline constexpr cublasOperation_t kCublasOpN = 0;       // CUBLAS_OP_N
inline constexpr cublasOperation_t kCublasOpT = 1;       // CUBLAS_OP_T
inline constexpr cublasMath_t kCublasDefaultMath = 0;    // CUBLAS_DEFAULT_MATH
inline constexpr cublasMath_t kCublasPedanticMath = 2;   // CUBLAS_PEDANTIC_MATH
inline constexpr libraryPropertyType kMajorVersion = 0;  // MAJOR_VERSION
inline constexpr libraryPropertyType kMinorVersion = 1;  // MINOR_VERSION
inline constexpr libraryPropertyType kPatchLevel = 2;    // PATCH_LEVEL

}  // namespace kiln::cuda

#define KILN_CUBLAS_API(X)                                                                      \
  X(cublasGetProperty, cublasGetProperty, cublasStatus_t, (libraryPropertyType, int*))          \
  X(cublasGetStatusName, cublasGetStatusName, const char*, (cublasStatus_t))                    \
  X(cublasGetStatusString, cublasGetStatusString, const char*, (cublasStatus_t))                \
  X(cublasCreate, cublasCreate_v2, cublasStatus_t, (cublasHandle_t*))                           \
  X(cublasSetStream, cublasSetStream_v2, cublasStatus_t, (cublasHandle_t, CUstream))            \
  X(cublasSetMathMode, cublasSetMathMode, cublasStatus_t, (cublasHandle_t, cublasMath_t))       \
  X(cublasSgemm, cublasSgemm_v2, cublasStatus_t,                                                \
    (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,         \
     const float*, int, const float*, int, const float*, float*, int))                          \
  X(cublasDgemm, cublasDgemm_v2, cublasStatus_t,                                                \
    (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const double*,        \
     const double*, int, const double*, int, const double*, double*, int))                      \
  X(cublasSgemmStridedBatched, cublasSgemmStridedBatched, cublasStatus_t,                       \
    (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,         \
     const float*, int, long long, const float*, int, long long, const float*, float*, int,     \
     long long, int))                                                                           \
  X(cublasDgemmStridedBatched, cublasDgemmStridedBatched, cublasStatus_t,                       \
    (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const double*,        \
     const double*, int, long long, const double*, int, long long, const double*, double*, int, \
     long long, int))
