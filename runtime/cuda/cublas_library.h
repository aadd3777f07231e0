// libcublas, loaded with dlopen on first use (never linked: one kiln build runs on machines with
// and without CUDA), and one cuBLAS handle per device bound to that device's stream.
//
// Names tried: libcublas.so.13, libcublas.so.12, libcublas.so, then the same versioned files
// under $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (often not on the loader's path). libcublas
// finds its libcublasLt itself (RUNPATH $ORIGIN). Loading never throws; cublas() and
// cublas_handle() raise kiln::Error saying why cuBLAS cannot be used.
//
// Math mode: CUBLAS_DEFAULT_MATH, set explicitly on every handle: Float32 products use FP32
// arithmetic, never TF32 tensor cores (10-bit mantissas would break the numerical contract of
// docs/cuda.md); Float64 never uses the fixed-point emulation, which needs its own mode.
#pragma once
#include <span>
#include <string>

#include "runtime/cuda/cublas_api.h"

namespace kiln::cuda {

struct Cublas {
#define KILN_CUBLAS_MEMBER(member, symbol, ret, params) ret(*member) params = nullptr;
  KILN_CUBLAS_API(KILN_CUBLAS_MEMBER)
#undef KILN_CUBLAS_MEMBER
};

struct CublasStatus {
  bool usable = false;
  std::string reason;  // why not ("" when usable)
  std::string path;    // the library file loaded
  int major = 0, minor = 0, patch = 0;
  std::string version() const;  // "13.1.0"
};

struct LoadedCublas {
  Cublas api;
  CublasStatus status;
};

// Loads cuBLAS from the first of `names` that opens and resolves every entry point. Never throws.
LoadedCublas load_cublas(std::span<const char* const> names);

// The process's cuBLAS, loaded on the first call (thread-safe, once).
const CublasStatus& cublas_status();
// Its entry points; throws kiln::Error "cuBLAS is not available: <reason>" when it is not usable.
const Cublas& cublas();

// "CUBLAS_STATUS_INVALID_VALUE (an invalid value was used as an argument)", using `api`'s
// strings when it has them.
std::string cublas_error_text(const Cublas& api, cublasStatus_t r);
// Throws kiln::Error "<what> failed: <cublas_error_text>" unless r is CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t r, const char* what);

// Device `index`'s handle (created on first use, kept for the process): bound to the device's
// stream (runtime/cuda/device_context.h) with CUBLAS_DEFAULT_MATH. Callers make the device
// current first (make_current). Throws when CUDA or cuBLAS is not available.
cublasHandle_t cublas_handle(int index);

}  // namespace kiln::cuda
