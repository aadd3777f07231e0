// The instruction set the CPU JIT emits for: the best the host has (AVX-512 with VL/DQ/BW, AVX2
// with FMA, or SSE2), or a lower one forced with KILN_JIT_ISA so every path is tested on one
// machine. Part of every kernel cache key.
#pragma once
#include <cstdint>

namespace kiln::jit {

enum class JitIsa : uint8_t { Sse2, Avx2, Avx512 };

const char* jit_isa_name(JitIsa isa);
JitIsa host_jit_isa();    // the best the CPU supports
JitIsa active_jit_isa();  // host_jit_isa(), lowered by config().jit_isa (KILN_JIT_ISA)

}  // namespace kiln::jit
