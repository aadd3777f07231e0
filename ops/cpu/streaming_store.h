// Non-temporal (streaming) stores for the per-ISA kernel files (*_kernels.cpp, compiled once per
// ISA): the vector width follows the flags the file is compiled with (AVX-512: 64 bytes, AVX2:
// 32, baseline SSE2: 16). A streamed store writes the same bits as a plain one; it only keeps a
// large output that nothing reads soon from evicting the caches (and saves the read-for-ownership
// of every destination line). Used for contiguous outputs of at least kStreamingBytes
// (ops/cpu/pointwise_table.h), the JIT's threshold.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ops/cpu/elementwise_loop.h"

#ifndef KILN_ISA_NS
#error "ops/cpu/streaming_store.h is for the per-ISA kernel files (KILN_ISA_NS)"
#endif

namespace kiln::KILN_ISA_NS::streaming {

#if defined(__AVX512F__)
inline constexpr int64_t kVecBytes = 64;
#elif defined(__AVX__)
inline constexpr int64_t kVecBytes = 32;
#else
inline constexpr int64_t kVecBytes = 16;
#endif

// Runs shorter than this (bytes) are written with plain stores: the prologue, the tail and the
// fence would cost more than the streamed middle saves.
inline constexpr int64_t kMinRunBytes = 4096;

// One vector from src (any alignment) to dst (aligned to kVecBytes) with a non-temporal store.
template <class T>
inline void stream_one(T* dst, const T* src) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>)
    _mm512_stream_ps(dst, _mm512_loadu_ps(src));
  else if constexpr (std::is_same_v<T, double>)
    _mm512_stream_pd(dst, _mm512_loadu_pd(src));
  else
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#elif defined(__AVX__)
  if constexpr (std::is_same_v<T, float>)
    _mm256_stream_ps(dst, _mm256_loadu_ps(src));
  else if constexpr (std::is_same_v<T, double>)
    _mm256_stream_pd(dst, _mm256_loadu_pd(src));
  else
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
#else
  if constexpr (std::is_same_v<T, float>)
    _mm_stream_ps(dst, _mm_loadu_ps(src));
  else if constexpr (std::is_same_v<T, double>)
    _mm_stream_pd(dst, _mm_loadu_pd(src));
  else
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
#endif
}

// Makes this thread's streamed stores visible before anything it stores afterwards (they are
// weakly ordered): every kernel that streams ends with it, on the thread that streamed.
inline void fence() { _mm_sfence(); }

// Elements of T before `p`'s first vector boundary (p is aligned to sizeof(T)).
template <class T>
inline int64_t head_elements(const T* p) {
  const auto mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) & (kVecBytes - 1));
  return mis == 0 ? 0 : (kVecBytes - mis) / int64_t(sizeof(T));
}

// dst[0, n) = src[0, n): plain stores up to dst's first vector boundary (the scalar prologue),
// whole vectors streamed (four per iteration), plain stores for the tail. No fence.
template <class T>
inline void copy_streamed(T* dst, const T* src, int64_t n) {
  constexpr int64_t L = kVecBytes / int64_t(sizeof(T));
  int64_t i = std::min(n, head_elements(dst));
  for (int64_t j = 0; j < i; ++j) dst[j] = src[j];
  for (; i + 4 * L <= n; i += 4 * L) {
    stream_one(dst + i, src + i);
    stream_one(dst + i + L, src + i + L);
    stream_one(dst + i + 2 * L, src + i + 2 * L);
    stream_one(dst + i + 3 * L, src + i + 3 * L);
  }
  for (; i + L <= n; i += L) stream_one(dst + i, src + i);
  for (; i < n; ++i) dst[i] = src[i];
}

// True when a run of n elements of T at dst is worth streaming: dst element-aligned (the
// prologue can reach a vector boundary) and the run long enough.
template <class T>
inline bool worth_streaming(const void* dst, int64_t n) {
  return (reinterpret_cast<uintptr_t>(dst) % sizeof(T)) == 0 &&
         n * int64_t(sizeof(T)) >= kMinRunBytes;
}

// The streaming variant of an inner loop whose output has element type O: where the output run
// is contiguous and long, `Loop` computes blocks into an L1-resident buffer (its inputs untouched,
// its strides the same, so it takes the same code path and gives the same bits) and each block
// is streamed to the output; other runs go to `Loop` as they are.
template <auto Loop, class O>
void streamed_loop(char* const* p, const int64_t* s, int64_t n, const Scalar* params) {
  if (s[0] != int64_t(sizeof(O)) || !worth_streaming<O>(p[0], n)) return Loop(p, s, n, params);
  constexpr int kOps = ElementwiseLoop::kMaxOperands;  // ptrs/strides arrays always hold kOps
  constexpr int64_t kBlock = 4096 / int64_t(sizeof(O));
  alignas(64) O buf[kBlock];
  O* out = reinterpret_cast<O*>(p[0]);
  const int64_t head = std::min(n, head_elements(out));
  if (head > 0) Loop(p, s, head, params);
  char* q[kOps];
  for (int64_t i = head; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    q[0] = reinterpret_cast<char*>(buf);
    for (int k = 1; k < kOps; ++k) q[k] = p[k] + i * s[k];
    Loop(q, s, m, params);
    copy_streamed(out + i, buf, m);  // out + i is vector-aligned: head, then whole blocks
  }
  fence();
}

// Streaming copy of T to T (Copy, and Cast to the same dtype): both runs contiguous streams
// straight from the source; anything else through streamed_loop around `Loop`.
template <auto Loop, class T>
void streamed_copy(char* const* p, const int64_t* s, int64_t n, const Scalar* params) {
  if (s[0] == int64_t(sizeof(T)) && s[1] == int64_t(sizeof(T)) && worth_streaming<T>(p[0], n) &&
      reinterpret_cast<uintptr_t>(p[1]) % sizeof(T) == 0) {
    copy_streamed(reinterpret_cast<T*>(p[0]), reinterpret_cast<const T*>(p[1]), n);
    fence();
    return;
  }
  streamed_loop<Loop, T>(p, s, n, params);
}

}  // namespace kiln::KILN_ISA_NS::streaming
