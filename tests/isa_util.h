// Which eager kernel ISAs a bitwise cross-ISA test compares: baseline and every ISA up to the
// active one (ops/cpu/isa.h: the best the CPU has, or lower when KILN_CPU_ISA caps it). A CPU
// without AVX-512 still compares AVX2 with baseline, and `KILN_CPU_ISA=avx2` checks that path on
// a machine that has AVX-512.
#pragma once
#include <cstdio>
#include <string>

#include "ops/cpu/isa.h"

namespace kiln::testing {

// How many ISAs to compare: 1 (baseline only), 2 (and AVX2) or 3 (and AVX-512), in CpuIsa order.
inline int isas_to_compare(const char* test) {
  const int n = static_cast<int>(active_isa()) + 1;
  std::string names;
  for (int k = 0; k < n; ++k)
    names += std::string(k ? ", " : "") + isa_name(static_cast<CpuIsa>(k));
  std::printf("[isa] %s compares: %s\n", test, names.c_str());
  return n;
}

}  // namespace kiln::testing
