// OpenBLAS, loaded with dlopen on the first BLAS call (never linked), so that kiln can choose its
// kernels before it initializes: OpenBLAS reads OPENBLAS_CORETYPE once, in its load-time
// constructor, and Debian 12's 0.3.21 gives CPUs newer than itself its SSE3 kernels
// (ops/cpu/blas_core_hint.h: 5x slower sgemm on Emerald Rapids).
//
// Loading: when the process has not loaded OpenBLAS already and OPENBLAS_CORETYPE is unset, kiln
// sets it to blas_core_hint's choice for the CPU (setenv: do not read the environment from other
// threads during the first matmul), then opens libopenblas.so.0 (else the library CMake found).
// A library the program loaded itself (linked, or through another library) is used as it is;
// then kiln warns once if it runs kernels below the CPU's ISA.
//
// The entry points are typed without cblas.h (its enums are ints: kiln's values are checked
// against it in openblas_library.cpp), so that only that file needs OpenBLAS's headers.
#pragma once
#include <string>

namespace kiln::blas {

enum BlasOrder : int { kRowMajor = 101 };
enum BlasTranspose : int { kNoTrans = 111, kTrans = 112 };

struct OpenBlas {
  void (*sgemm)(BlasOrder, BlasTranspose, BlasTranspose, int M, int N, int K, float alpha,
                const float* A, int lda, const float* B, int ldb, float beta, float* C,
                int ldc) = nullptr;
  void (*dgemm)(BlasOrder, BlasTranspose, BlasTranspose, int M, int N, int K, double alpha,
                const double* A, int lda, const double* B, int ldb, double beta, double* C,
                int ldc) = nullptr;
  void (*sgemv)(BlasOrder, BlasTranspose, int M, int N, float alpha, const float* A, int lda,
                const float* x, int incx, float beta, float* y, int incy) = nullptr;
  void (*dgemv)(BlasOrder, BlasTranspose, int M, int N, double alpha, const double* A, int lda,
                const double* x, int incx, double beta, double* y, int incy) = nullptr;
  float (*sdot)(int n, const float* x, int incx, const float* y, int incy) = nullptr;
  double (*ddot)(int n, const double* x, int incx, const double* y, int incy) = nullptr;
  void (*set_num_threads)(int) = nullptr;
  int (*get_num_threads)() = nullptr;
  char* (*get_corename)() = nullptr;
};

struct OpenBlasStatus {
  bool usable = false;
  std::string reason;          // why not ("" when usable)
  std::string path;            // the file loaded
  std::string core;            // openblas_get_corename(): the kernels it runs ("SkylakeX")
  std::string core_hint;       // the OPENBLAS_CORETYPE kiln set ("" when it set none)
  bool loaded_before = false;  // the process had loaded OpenBLAS before kiln's first call
};

// Loaded on the first call (thread-safe, once). openblas() throws kiln::Error "matmul needs
// OpenBLAS (libopenblas.so.0), which could not be loaded: <why>" when it is not usable.
const OpenBlasStatus& openblas_status();
const OpenBlas& openblas();

}  // namespace kiln::blas
