// OpenBLAS loaded by kiln (ops/cpu/openblas_library.h) with the kernels of the CPU's ISA
// (ops/cpu/blas_core_hint.h): the rule, and the library this process actually runs.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "kiln/kiln.h"
#include "ops/cpu/blas_core_hint.h"
#include "ops/cpu/openblas_library.h"
#include "self_child.h"

using namespace kiln::blas;

TEST(OpenBlasCoreHint, AvxFiveTwelveAndIntelCoresFollowTheIsaOtherAmdGetsNone) {
  CpuBlasFeatures f;
  EXPECT_EQ(openblas_core_for(f), nullptr);  // not Intel
  f.avx2_fma = true;
  EXPECT_EQ(openblas_core_for(f), nullptr);  // AMD with AVX2 (Zen 1-3): OpenBLAS's own "Zen"
  f.avx512_skx = true;  // AMD with AVX-512 (Zen 4, 5): 0.3.21 gave a Zen 5 "Haswell"
  EXPECT_STREQ(openblas_core_for(f), "SkylakeX");
  f.avx512_bf16 = true;
  EXPECT_STREQ(openblas_core_for(f), "Cooperlake");
  f.avx512_bf16 = false;
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
  for (const char* c : {"SkylakeX", "Cooperlake", "SapphireRapids"}) EXPECT_TRUE(is_avx512_core(c));
  for (const char* c : {"Haswell", "Zen", "Prescott"}) EXPECT_FALSE(is_avx512_core(c)) << c;
}

// Below the ISA: no AVX2 kernels on an AVX2 CPU, or no AVX-512 kernels on an AVX-512 CPU (the
// warning's condition: Debian's 0.3.21 running "Haswell" on a Zen 5 was 1.7x slower at sgemm).
TEST(OpenBlasCoreHint, SlowCoresAreThoseBelowTheCpusIsa) {
  CpuBlasFeatures f;
  EXPECT_FALSE(is_slow_openblas_core(f, "Prescott"));  // an SSE CPU
  f.avx2_fma = true;
  EXPECT_TRUE(is_slow_openblas_core(f, "Prescott"));
  EXPECT_FALSE(is_slow_openblas_core(f, "Zen"));
  EXPECT_FALSE(is_slow_openblas_core(f, "Haswell"));
  f.avx512_skx = true;
  EXPECT_TRUE(is_slow_openblas_core(f, "Haswell"));
  EXPECT_TRUE(is_slow_openblas_core(f, "Zen"));
  EXPECT_FALSE(is_slow_openblas_core(f, "SkylakeX"));
  EXPECT_FALSE(is_slow_openblas_core(f, "Cooperlake"));
  EXPECT_FALSE(is_slow_openblas_core(f, nullptr));
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
  if (!users_choice) {
    EXPECT_FALSE(is_slow_openblas_core(f, st.core.c_str())) << st.core;
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

// A program that loaded OpenBLAS itself before kiln's first BLAS call (it links OpenBLAS, or
// another library brings it): kiln uses that library as it is, sets no OPENBLAS_CORETYPE, and
// warns once when it runs kernels below the CPU's ISA (Debian's OpenBLAS on a CPU newer than it).
// The child loads OpenBLAS with dlopen first, then multiplies.
TEST(OpenBlasChild, LoadedByTheProgramFirst) {
  if (!std::getenv("KILN_TEST_OPENBLAS_CHILD")) GTEST_SKIP() << "run by LoadedByTheProgram...";
  ASSERT_NE(dlopen("libopenblas.so.0", RTLD_NOW | RTLD_GLOBAL), nullptr) << dlerror();
  const kiln::Tensor p = kiln::matmul(kiln::full({3, 4}, 2.0f), kiln::full({4, 5}, 0.5f));
  EXPECT_FLOAT_EQ(p.sum().item<float>(), 3 * 5 * 4.0f);
  const OpenBlasStatus& st = openblas_status();
  ASSERT_TRUE(st.usable) << st.reason;
  EXPECT_TRUE(st.loaded_before);
  EXPECT_TRUE(st.core_hint.empty());
  std::fprintf(stderr, "core=%s\n", st.core.c_str());
}

TEST(OpenBlasLibrary, LoadedByTheProgramFirstIsUsedAsItIsWithAWarningWhenSlow) {
  const std::string err = ::testing::TempDir() + "kiln_openblas_child.txt";
  const kiln::testing::SelfChildResult r =
      kiln::testing::run_self_as_child("-u OPENBLAS_CORETYPE KILN_TEST_OPENBLAS_CHILD=1",
                                       "OpenBlasChild.LoadedByTheProgramFirst", err);
  ASSERT_EQ(r.status, 0) << r.command;
  ASSERT_EQ(r.completed, 1) << r.command;
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("core=");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string core = text.substr(at + 5, text.find('\n', at) - at - 5);
  const bool slow = is_slow_openblas_core(host_blas_features(), core.c_str());
  EXPECT_EQ(text.find("OpenBLAS runs its " + core + " kernels") != std::string::npos, slow)
      << core << ":\n"
      << text;
}
