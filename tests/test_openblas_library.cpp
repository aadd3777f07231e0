// OpenBLAS loaded by kiln (ops/cpu/openblas_library.h) with the kernels of the CPU's ISA
// (ops/cpu/blas_core_hint.h): the rule, and the library this process actually runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kiln/kiln.h"
#include "ops/cpu/blas_core_hint.h"
#include "ops/cpu/openblas_library.h"

using namespace kiln::blas;

TEST(OpenBlasCoreHint, IntelCoresFollowTheIsaAndOtherVendorsGetNone) {
  CpuBlasFeatures f;
  EXPECT_EQ(openblas_core_for(f), nullptr);  // not Intel
  f.avx2_fma = f.avx512_skx = true;
  EXPECT_EQ(openblas_core_for(f), nullptr);  // AMD with AVX-512 (Zen 4): OpenBLAS maps it
  f.intel = true;
  EXPECT_STREQ(openblas_core_for(f), "SkylakeX");
  f.avx512_bf16 = true;
  EXPECT_STREQ(openblas_core_for(f), "Cooperlake");
  f.avx512_skx = f.avx512_bf16 = false;
  EXPECT_STREQ(openblas_core_for(f), "Haswell");
  f.avx2_fma = false;  // Sandy Bridge, or AVX off in the OS: OpenBLAS's own choice
  EXPECT_EQ(openblas_core_for(f), nullptr);
  for (const char* c : {"Haswell", "SkylakeX", "Cooperlake", "Zen"}) EXPECT_TRUE(is_avx2_core(c));
  for (const char* c : {"Prescott", "Nehalem", "Sandybridge", "Core2"})
    EXPECT_FALSE(is_avx2_core(c)) << c;
}

// On this host: OpenBLAS was not loaded before kiln's first BLAS call (the test binary does not
// link it), and it runs kernels of the CPU's ISA. Before the loader, Debian's OpenBLAS ran its
// Prescott kernels on an Emerald Rapids VM (family 6 model 207), 5x slower.
TEST(OpenBlasLibrary, LoadedByKilnWithTheKernelsOfTheCpusIsa) {
  (void)kiln::matmul(kiln::ones({4, 4}), kiln::ones({4, 4})).sum().item<float>();
  const OpenBlasStatus& st = openblas_status();
  ASSERT_TRUE(st.usable) << st.reason;
  EXPECT_FALSE(st.loaded_before);
  EXPECT_FALSE(st.path.empty());
  EXPECT_EQ(std::string(openblas().get_corename()), st.core);
  const CpuBlasFeatures f = host_blas_features();
  const char* hint = openblas_core_for(f);
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  // A user's own OPENBLAS_CORETYPE is theirs to get wrong (kiln warns, `Warns...` below).
  const bool users_choice = env != nullptr && st.core_hint.empty();
  if (f.avx2_fma && !users_choice) {
    EXPECT_TRUE(is_avx2_core(st.core.c_str())) << st.core;
  }
  if (hint != nullptr && !users_choice) {
    EXPECT_EQ(st.core_hint, hint);
    EXPECT_EQ(st.core, hint);
    ASSERT_NE(env, nullptr);
    EXPECT_STREQ(env, hint);
  }
  if (hint == nullptr) {
    EXPECT_TRUE(st.core_hint.empty());
  }
}
