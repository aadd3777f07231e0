#include "ops/cpu/isa.h"

#include <cstdlib>
#include <string_view>

#include "runtime/error.h"

namespace kiln {

namespace {
CpuIsa detect() {
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl");
  CpuIsa best = avx512 ? CpuIsa::Avx512 : (avx2 ? CpuIsa::Avx2 : CpuIsa::Baseline);
  const char* v = std::getenv("KILN_CPU_ISA");
  if (!v || !*v) return best;
  std::string_view s(v);
  CpuIsa want = s == "baseline" ? CpuIsa::Baseline
                : s == "avx2"   ? CpuIsa::Avx2
                : s == "avx512" ? CpuIsa::Avx512
                                : (fail("KILN_CPU_ISA={}: expected baseline, avx2 or avx512", s),
                                   CpuIsa::Baseline);
  KILN_CHECK(static_cast<int>(want) <= static_cast<int>(best),
             "KILN_CPU_ISA={}: this CPU only supports up to {}", s, isa_name(best));
  return want;
}
}  // namespace

CpuIsa active_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

const char* isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Baseline:
      return "baseline";
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx512:
      return "avx512";
  }
  return "?";
}

}  // namespace kiln
