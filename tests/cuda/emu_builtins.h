// A CPU stand-in for the CUDA built-ins that kiln's rendered kernels use, so that CI without a
// GPU can run their CUDA C++ source compiled as host C++ (tests/test_cuda_reduce_emulated.cpp).
// A block's 256 threads are std::threads; __syncthreads is a std::barrier of the block; a warp
// shuffle writes every lane's value to an exchange buffer, waits for the warp, reads, and waits
// again; __shared__ variables are function statics (blocks run one after another). This checks
// the kernels' logic (indexing, passes, the tree, barriers' placement) and their arithmetic
// (+ - * / sqrt round alike on both), not CUDA's math library or its memory model.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(x)
#define __shared__ static

struct KilnEmuDim {
  unsigned x;
};
inline thread_local KilnEmuDim threadIdx, blockIdx;
inline KilnEmuDim gridDim, blockDim{256};

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline double __longlong_as_double(long long i) {
  double f;
  std::memcpy(&f, &i, 8);
  return f;
}

inline std::unique_ptr<std::barrier<>> kiln_emu_block;
inline std::unique_ptr<std::barrier<>> kiln_emu_warp[8];
inline uint64_t kiln_emu_xchg[256];

inline void __syncthreads() { kiln_emu_block->arrive_and_wait(); }

// Lane `from` of the calling thread's warp (its own value when `from` is past the warp).
template <class T>
T kiln_emu_shfl(T v, int from) {
  const int tid = static_cast<int>(threadIdx.x), w = tid >> 5;
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  kiln_emu_xchg[tid] = b;
  kiln_emu_warp[w]->arrive_and_wait();
  T r = v;
  if (from < 32) std::memcpy(&r, &kiln_emu_xchg[w * 32 + from], sizeof(T));
  kiln_emu_warp[w]->arrive_and_wait();
  return r;
}
template <class T>
T __shfl_down_sync(unsigned, T v, int s) {
  return kiln_emu_shfl(v, static_cast<int>(threadIdx.x & 31) + s);
}
template <class T>
T __shfl_sync(unsigned, T v, int src) {
  return kiln_emu_shfl(v, src);
}

// Runs kernel `k` over `grid` blocks of 256 threads, one block after another (each thread runs
// its part of every block; a barrier between blocks keeps their __shared__ statics apart).
template <class Args>
void kiln_emu_launch(void (*k)(Args), const Args& a, unsigned grid) {
  gridDim.x = grid;
  kiln_emu_block = std::make_unique<std::barrier<>>(256);
  for (auto& w : kiln_emu_warp) w = std::make_unique<std::barrier<>>(32);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 256; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        k(a);
        kiln_emu_block->arrive_and_wait();
      }
    });
  for (auto& t : threads) t.join();
}
