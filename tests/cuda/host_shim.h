// The CUDA builtins kiln's generated kernels use, for the host: the generated text (the very
// source NVRTC compiles) then compiles as host C++ (tests/test_cuda_host_kernels.cpp). A launch is
// one thread of a one-block grid, whose grid-stride loop then covers every element in order.
// Math (sqrt, log, cos) is the host's libm: randn's numbers are the CPU's here, while on a GPU
// CUDA's double log/cos apply (docs/random.md states that bound).
#pragma once
#include <cmath>
#include <cstring>

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(threads)

struct KilnHostDim {
  unsigned x;
};
inline constexpr KilnHostDim gridDim{1}, blockDim{1}, blockIdx{0}, threadIdx{0};

inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected,
                                    unsigned long long desired) {
  const unsigned long long old = *p;
  if (old == expected) *p = desired;
  return old;
}
inline void __threadfence_system() {}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, sizeof d);
  return d;
}
