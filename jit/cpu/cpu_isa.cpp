#include "jit/cpu/cpu_isa.h"

#include <asmjit/x86.h>

#include <algorithm>

#include "runtime/config.h"
#include "runtime/error.h"

namespace kiln::jit {

const char* jit_isa_name(JitIsa isa) {
  switch (isa) {
    case JitIsa::Avx512:
      return "avx512";
    case JitIsa::Avx2:
      return "avx2";
    default:
      return "sse2";
  }
}

JitIsa host_jit_isa() {
  static const JitIsa isa = [] {
    const asmjit::CpuInfo& cpu = asmjit::CpuInfo::host();
    using F = asmjit::CpuFeatures::X86;
    const bool avx2 = cpu.hasFeature(F::kAVX2) && cpu.hasFeature(F::kFMA);
    const bool avx512 = avx2 && cpu.hasFeature(F::kAVX512_F) && cpu.hasFeature(F::kAVX512_VL) &&
                        cpu.hasFeature(F::kAVX512_DQ) && cpu.hasFeature(F::kAVX512_BW);
    return avx512 ? JitIsa::Avx512 : avx2 ? JitIsa::Avx2 : JitIsa::Sse2;
  }();
  return isa;
}

JitIsa active_jit_isa() {
  const std::string& want = config().jit_isa;
  JitIsa host = host_jit_isa();
  if (want.empty()) return host;
  JitIsa asked = want == "avx512" ? JitIsa::Avx512 : want == "avx2" ? JitIsa::Avx2 : JitIsa::Sse2;
  return std::min(asked, host);  // never above what the CPU runs
}

}  // namespace kiln::jit
