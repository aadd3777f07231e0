// Which OpenBLAS kernels run on this CPU. Debian 12's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its
// kernels from the CPU's family and model number, and a model newer than its build (Emerald
// Rapids, family 6 model 207; likewise Sapphire and Granite Rapids) gets its Prescott (SSE3)
// kernels: sgemm 256x1024x1024 on two threads took 15.0 ms there against 3.0 ms with the
// SkylakeX kernels the CPU can run (kiln-gemm-bench, docs/performance.md). OpenBLAS reads
// OPENBLAS_CORETYPE once, when it loads; kiln loads it (ops/cpu/openblas_library.h) after
// setting that variable, when the user has not, from the CPU's features:
//   - any CPU with AVX-512 F/CD/BW/DQ/VL (and the OS saving their registers): "Cooperlake" with
//     AVX512_BF16, else "SkylakeX" (the two share their sgemm and dgemm kernels). That covers
//     AMD's Zen 4 and Zen 5 too, which later OpenBLAS releases map to the same kernels: 0.3.21
//     gives a Zen 5 (family 26) its AVX2 "Haswell" kernels, sgemm 1024^3 on one thread 20.0 ms
//     against 11.5 ms with SkylakeX's (kiln-step-floor, docs/performance.md);
//   - Intel with AVX2 and FMA: "Haswell";
//   - anything else: no hint (AMD CPUs without AVX-512, Zen 1 to 3, get OpenBLAS's "Zen").
// Every Intel model OpenBLAS 0.3.21 knows and that has these features gets these kernels anyway.
#pragma once

namespace kiln::blas {

struct CpuBlasFeatures {
  bool intel = false;
  bool avx2_fma = false;     // AVX2 and FMA, usable (the OS saves YMM)
  bool avx512_skx = false;   // AVX-512 F, CD, BW, DQ, VL, usable (the OS saves ZMM and k)
  bool avx512_bf16 = false;  // AVX512_BF16 besides
};

// The host's features, from CPUID.
CpuBlasFeatures host_blas_features();

// The OPENBLAS_CORETYPE for a CPU with these features, or nullptr for none.
const char* openblas_core_for(const CpuBlasFeatures& f);

// Whether an OpenBLAS core name (openblas_get_corename()) has AVX2 and FMA kernels or better.
bool is_avx2_core(const char* name);

// Whether an OpenBLAS core name has AVX-512 kernels.
bool is_avx512_core(const char* name);

// Whether OpenBLAS running `core` on a CPU with these features runs kernels below its ISA: no
// AVX2 kernels on a CPU with AVX2 and FMA, or no AVX-512 kernels on a CPU with AVX-512.
bool is_slow_openblas_core(const CpuBlasFeatures& f, const char* core);

// Warns (once per process) when OpenBLAS runs `core`, a core below the host's ISA
// (is_slow_openblas_core); `why` says how it came to (the program loaded OpenBLAS before kiln
// could pick, or set OPENBLAS_CORETYPE itself). The warning names the variable to set.
void warn_if_slow_openblas_core(const char* core, const char* why);

}  // namespace kiln::blas
