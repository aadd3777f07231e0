// Which pass of the suite a test runs in. tests/CMakeLists.txt runs kiln-tests several times:
// the KILN_JIT=0 pass, the recorded pass (KILN_JIT=1), one pass per lower JIT instruction set
// (KILN_JIT_ISA=avx2, sse2) and the JIT tests once more with asmjit's Compiler
// (KILN_JIT_ASSEMBLER=0). A test whose work none of those variables changes need run only once;
// these skips say so in the output of the other passes.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace kiln::testing {

inline bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

// The recorded pass, a per-ISA pass or the Compiler pass.
inline bool in_a_cpu_jit_pass() {
  const char* isa = std::getenv("KILN_JIT_ISA");
  return env_is("KILN_JIT", "1") || (isa != nullptr && *isa != 0);
}

}  // namespace kiln::testing

// Tests that call no JIT (the vector math itself, the CUDA codegen, which KILN_JIT and the CPU
// JIT's ISA do not reach): the KILN_JIT=0 pass only.
#define KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY(why)                                 \
  do {                                                                             \
    if (::kiln::testing::in_a_cpu_jit_pass())                                      \
      GTEST_SKIP() << why                                                          \
                   << ": independent of KILN_JIT and KILN_JIT_ISA, tested in the " \
                      "KILN_JIT=0 pass";                                           \
  } while (0)

// Tests that compile and launch kernels through the CPU target for every ISA themselves
// (supported_jit_isas() under a KILN_JIT_ISA override): the recorded and per-ISA passes would
// repeat their work exactly. They run in the KILN_JIT=0 pass and in the Compiler pass, whose
// emitter they depend on.
#define KILN_SWEEPS_EVERY_ISA_ITSELF()                                                             \
  do {                                                                                             \
    if (::kiln::testing::in_a_cpu_jit_pass() &&                                                    \
        !::kiln::testing::env_is("KILN_JIT_ASSEMBLER", "0"))                                       \
      GTEST_SKIP() << "sweeps every JIT ISA itself: tested in the KILN_JIT=0 and Compiler passes"; \
  } while (0)
