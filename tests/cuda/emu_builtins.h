// A CPU stand-in for the CUDA built-ins that kiln's rendered kernels use, so that CI without a
// GPU can run their CUDA C++ source compiled as host C++ (tests/test_cuda_reduce_emulated.cpp).
// A block's 256 threads are fibers (ucontext) on the calling thread, run round robin: each runs
// until it waits at a barrier (__syncthreads, or the warp's barrier inside a shuffle) and the
// next one runs; a barrier lets its waiters go once all of them have arrived. A warp shuffle
// writes every lane's value to an exchange buffer, waits for the warp, reads, and waits again;
// __shared__ variables are function statics (blocks run one after another). This checks the
// kernels' logic (indexing, passes, the tree, barriers' placement: a thread runs as far ahead as
// it can, so a missing barrier reads what others have not yet written) and their arithmetic
// (+ - * / sqrt round alike on both), not CUDA's math library or its memory model. Fibers, not
// std::threads: 256 threads per block on a 2-core CI machine spent most of the test's minutes
// in the kernel's scheduler (a test timed out at 300 s there).
#pragma once
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
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
inline KilnEmuDim threadIdx, blockIdx;  // the running fiber's, set before each switch to it
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

// The fibers of one block and the context that schedules them.
struct KilnEmuFiber {
  ucontext_t context;
  bool done = false;
};
inline constexpr size_t kiln_emu_stack_bytes = 64 * 1024;
inline KilnEmuFiber kiln_emu_fibers[256];
inline std::vector<char> kiln_emu_stacks;
inline ucontext_t kiln_emu_scheduler;
inline unsigned kiln_emu_running = 0;
inline std::function<void()> kiln_emu_body;

// Back to the scheduler, which runs the next fiber; this one resumes on the next round.
inline void kiln_emu_yield() {
  if (swapcontext(&kiln_emu_fibers[kiln_emu_running].context, &kiln_emu_scheduler) != 0)
    std::abort();
}

struct KilnEmuBarrier {
  unsigned count, arrived = 0, phase = 0;
  void arrive_and_wait() {
    const unsigned p = phase;
    if (++arrived == count) {
      arrived = 0;
      ++phase;
      return;
    }
    while (phase == p) kiln_emu_yield();
  }
};
inline KilnEmuBarrier kiln_emu_block{256};
inline KilnEmuBarrier kiln_emu_warp[8] = {{32}, {32}, {32}, {32}, {32}, {32}, {32}, {32}};
inline uint64_t kiln_emu_xchg[256];

inline void __syncthreads() { kiln_emu_block.arrive_and_wait(); }

// Lane `from` of the calling thread's warp (its own value when `from` is past the warp).
template <class T>
T kiln_emu_shfl(T v, int from) {
  const int tid = static_cast<int>(threadIdx.x), w = tid >> 5;
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  kiln_emu_xchg[tid] = b;
  kiln_emu_warp[w].arrive_and_wait();
  T r = v;
  if (from < 32) std::memcpy(&r, &kiln_emu_xchg[w * 32 + from], sizeof(T));
  kiln_emu_warp[w].arrive_and_wait();
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

inline void kiln_emu_fiber_main() {
  kiln_emu_body();
  kiln_emu_fibers[kiln_emu_running].done = true;  // returning resumes uc_link: the scheduler
}

// Runs kernel `k` over `grid` blocks of 256 fibers, one block after another.
template <class Args>
void kiln_emu_launch(void (*k)(Args), const Args& a, unsigned grid) {
  gridDim.x = grid;
  kiln_emu_body = [&] { k(a); };
  if (kiln_emu_stacks.empty()) kiln_emu_stacks.resize(256 * kiln_emu_stack_bytes);
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < 256; ++t) {
      KilnEmuFiber& f = kiln_emu_fibers[t];
      f.done = false;
      if (getcontext(&f.context) != 0) std::abort();
      f.context.uc_stack.ss_sp = kiln_emu_stacks.data() + t * kiln_emu_stack_bytes;
      f.context.uc_stack.ss_size = kiln_emu_stack_bytes;
      f.context.uc_link = &kiln_emu_scheduler;
      makecontext(&f.context, &kiln_emu_fiber_main, 0);
    }
    for (unsigned left = 256; left > 0;)
      for (unsigned t = 0; t < 256; ++t) {
        if (kiln_emu_fibers[t].done) continue;
        kiln_emu_running = t;
        threadIdx.x = t;
        blockIdx.x = b;
        if (swapcontext(&kiln_emu_scheduler, &kiln_emu_fibers[t].context) != 0) std::abort();
        left -= kiln_emu_fibers[t].done ? 1 : 0;
      }
  }
}
