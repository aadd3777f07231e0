// The vector ISA that kernels compiled per ISA (the *_kernels.cpp files, built once per ISA by
// CMake) run with: chosen once from the CPU's features, overridable with KILN_CPU_ISA for tests.
#pragma once

namespace kiln {

enum class CpuIsa { Baseline, Avx2, Avx512 };

CpuIsa active_isa();
const char* isa_name(CpuIsa isa);

}  // namespace kiln

// Each per-ISA translation unit is compiled with KILN_ISA_NS set to one of these namespaces.
#define KILN_FOR_EACH_ISA_NS(X) X(isa_baseline) X(isa_avx2) X(isa_avx512)
