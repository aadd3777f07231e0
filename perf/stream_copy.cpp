// See perf/stream_copy.h. The vector kernels are compiled for their ISA with target attributes
// (the rest of kiln-perf is built for the baseline) and only called where the CPU has it.
#include "perf/stream_copy.h"

#include <immintrin.h>

#include <algorithm>

#include "kiln/kiln.h"
#include "ops/cpu/isa.h"
#include "runtime/parallel.h"

namespace kiln::perf {

namespace {

using Kernel = void (*)(float*, const float*, int64_t);

// Plain stores up to dst's first `align`-byte boundary; returns the elements copied.
int64_t copy_head(float* dst, const float* src, int64_t n, uintptr_t align) {
  int64_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(dst + i) & (align - 1)) != 0; ++i) dst[i] = src[i];
  return i;
}

__attribute__((target("avx512f"))) void copy_avx512(float* dst, const float* src, int64_t n) {
  int64_t i = copy_head(dst, src, n, 64);
  for (; i + 64 <= n; i += 64) {  // four zmm per iteration: 256 bytes, four cache lines
    __m512 a = _mm512_loadu_ps(src + i), b = _mm512_loadu_ps(src + i + 16);
    __m512 c = _mm512_loadu_ps(src + i + 32), d = _mm512_loadu_ps(src + i + 48);
    _mm512_stream_ps(dst + i, a);
    _mm512_stream_ps(dst + i + 16, b);
    _mm512_stream_ps(dst + i + 32, c);
    _mm512_stream_ps(dst + i + 48, d);
  }
  for (; i + 16 <= n; i += 16) _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
  _mm_sfence();
}

__attribute__((target("avx2"))) void copy_avx2(float* dst, const float* src, int64_t n) {
  int64_t i = copy_head(dst, src, n, 32);
  for (; i + 32 <= n; i += 32) {
    __m256 a = _mm256_loadu_ps(src + i), b = _mm256_loadu_ps(src + i + 8);
    __m256 c = _mm256_loadu_ps(src + i + 16), d = _mm256_loadu_ps(src + i + 24);
    _mm256_stream_ps(dst + i, a);
    _mm256_stream_ps(dst + i + 8, b);
    _mm256_stream_ps(dst + i + 16, c);
    _mm256_stream_ps(dst + i + 24, d);
  }
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
  _mm_sfence();
}

void copy_plain(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

Kernel kernel() {
  switch (active_isa()) {
    case CpuIsa::Avx512:
      return copy_avx512;
    case CpuIsa::Avx2:
      return copy_avx2;
    default:
      return copy_plain;
  }
}

}  // namespace

const char* stream_copy_kernel() {
  switch (active_isa()) {
    case CpuIsa::Avx512:
      return "avx512";
    case CpuIsa::Avx2:
      return "avx2";
    default:
      return "plain";
  }
}

void stream_copy(float* dst, const float* src, int64_t n) {
  const Kernel k = kernel();
  // One chunk per thread, each a whole number of cache lines (16 floats), so that no two threads
  // write into one line and each thread's non-temporal stores fill whole lines.
  const int64_t threads = std::max(1, num_threads());
  const int64_t chunk = ((n + threads - 1) / threads + 15) / 16 * 16;
  parallel_for(0, threads, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t lo = std::min(n, c * chunk), hi = std::min(n, lo + chunk);
      if (hi > lo) k(dst + lo, src + lo, hi - lo);
    }
  });
}

}  // namespace kiln::perf
