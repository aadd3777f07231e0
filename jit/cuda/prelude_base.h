// The start of every CUDA source kiln renders (loop kernels, jit/cuda/render.cpp; kernels
// written as CUDA C++, jit/cuda/source_kernel.cpp): kiln's integer types, KILN_INLINE, and the
// index split's division, out of line (inlined, a 64-bit division costs NVRTC about as much time
// as the rest of a kernel: ~490 -> ~290 ms per kernel on a loaded 2-core machine), with a 32-bit
// division where both values fit. Indices are >= 0.
#pragma once

namespace kiln::jit::cuda {

inline constexpr const char* kCudaPreludeBase = R"(typedef unsigned long long kiln_u64;
typedef long long kiln_i64;
#define KILN_INLINE static __device__ __forceinline__
static __device__ __noinline__ kiln_i64 kiln_divmod(kiln_i64 r, kiln_i64 size, kiln_i64* q) {
  if (((kiln_u64)r | (kiln_u64)size) >> 32 == 0) {
    const unsigned q32 = (unsigned)r / (unsigned)size;
    *q = (kiln_i64)q32;
    return (kiln_i64)((unsigned)r - q32 * (unsigned)size);
  }
  *q = (kiln_i64)((kiln_u64)r / (kiln_u64)size);
  return r - *q * size;
}
)";

}  // namespace kiln::jit::cuda
