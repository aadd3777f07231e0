#include "ops/cpu/blas_core_hint.h"

#include <cstring>
#include <mutex>

#include "runtime/logging.h"

namespace kiln::blas {

CpuBlasFeatures host_blas_features() {
  __builtin_cpu_init();
  CpuBlasFeatures f;
  f.intel = __builtin_cpu_is("intel");
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512_skx = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vl");
  f.avx512_bf16 = f.avx512_skx && __builtin_cpu_supports("avx512bf16");
  return f;
}

const char* openblas_core_for(const CpuBlasFeatures& f) {
  if (f.avx512_skx) return f.avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (!f.intel) return nullptr;
  if (f.avx2_fma) return "Haswell";
  return nullptr;
}

bool is_avx2_core(const char* name) {
  // OpenBLAS's x86-64 cores with AVX2 and FMA kernels (OPENBLAS_VERBOSE=2 names the chosen one).
  for (const char* n : {"Haswell", "SkylakeX", "Cooperlake", "SapphireRapids", "Zen", "Excavator"})
    if (std::strcmp(name, n) == 0) return true;
  return false;
}

bool is_avx512_core(const char* name) {
  for (const char* n : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (std::strcmp(name, n) == 0) return true;
  return false;
}

bool is_slow_openblas_core(const CpuBlasFeatures& f, const char* core) {
  if (core == nullptr) return false;
  return (f.avx2_fma && !is_avx2_core(core)) || (f.avx512_skx && !is_avx512_core(core));
}

void warn_if_slow_openblas_core(const char* core, const char* why) {
  static std::once_flag once;
  const CpuBlasFeatures f = host_blas_features();
  if (!is_slow_openblas_core(f, core)) return;
  std::call_once(once, [&] {
    const char* better = openblas_core_for(f);
    KILN_WARN(
        Ops,
        "OpenBLAS runs its {} kernels on a CPU with AVX2 and FMA{}: matmul may be several "
        "times slower than it can be ({}); set OPENBLAS_CORETYPE={} before the program starts",
        core, f.avx512_skx ? " and AVX-512" : "", why, better ? better : "Haswell");
  });
}

}  // namespace kiln::blas
