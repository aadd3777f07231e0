// A streaming copy: float32 moved with non-temporal stores (AVX-512 `vmovntps` zmm or AVX2 ymm,
// then `sfence`; the best kiln's CPU ISA allows, chosen at run time; a plain loop otherwise),
// split into one contiguous chunk per kiln thread. It is the copy that bypasses the cache on the
// way out, so it moves more bytes per second than a copy through the cache once the data is far
// larger than the cache (jit-codegen notes: 46-54 GB/s against memcpy's 34-49 on the 2-core
// development machines). kiln-perf's `ceiling` workload measures it next to `copy_`.
#pragma once
#include <cstdint>

namespace kiln::perf {

// "avx512", "avx2" or "plain": the kernel stream_copy runs on this CPU (KILN_CPU_ISA caps it).
const char* stream_copy_kernel();

// dst[i] = src[i] for i < n, the ranges not overlapping, parallel over kiln's thread count
// (KILN_NUM_THREADS). The stores are complete (fenced) when it returns.
void stream_copy(float* dst, const float* src, int64_t n);

}  // namespace kiln::perf
