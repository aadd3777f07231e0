// NVRTC compiles CUDA C++ to a CUBIN for sm_90 on a machine without a GPU (no driver needed), a
// failing compile raises kiln::Error with NVRTC's log and dumps the source and log, and
// compile_cubin goes through the CUBIN cache (memory, then disk, then NVRTC).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda_test_util.h"
#include "expect_error.h"
#include "jit/cuda/compile.h"
#include "jit/cuda/nvrtc.h"
#include "kiln/kiln.h"
#include "runtime/config.h"

namespace kiln {
namespace {

using testing::expect_error;
using testing::TempDir;

constexpr const char* kAddOne = R"(
extern "C" __global__ void add_one(float* x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
)";

// A CUBIN is an ELF file for machine EM_CUDA (190).
void expect_cubin(const std::vector<char>& c) {
  ASSERT_GT(c.size(), 64u);
  EXPECT_EQ(std::memcmp(c.data(),
                        "\x7f"
                        "ELF",
                        4),
            0);
  uint16_t machine = 0;
  std::memcpy(&machine, c.data() + 18, 2);
  EXPECT_EQ(machine, 190);
}

TEST(CudaNvrtc, CompilesAKernelForSm90) {
  KILN_SKIP_WITHOUT_NVRTC();
  const auto archs = jit::cuda::nvrtc_supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
  EXPECT_FALSE(jit::cuda::nvrtc_version().empty());
  const auto opts = jit::cuda::nvrtc_options(90);
  EXPECT_EQ(opts[0], "--gpu-architecture=sm_90");
  expect_cubin(jit::cuda::nvrtc_compile(kAddOne, "add_one", opts));
}

TEST(CudaNvrtc, CompileErrorCarriesTheLogAndDumpsTheSource) {
  KILN_SKIP_WITHOUT_NVRTC();
  TempDir dir;
  std::string saved = config().dump;
  config().dump = dir.path() + ",code";
  const char* bad = "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }\n";
  expect_error([&] { jit::cuda::nvrtc_compile(bad, "broken op", jit::cuda::nvrtc_options(90)); },
               "kernel 'broken op' does not compile for sm_90", "undeclared_name");
  config().dump = saved;
  int cu = 0, log = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    std::ifstream f(e.path());
    std::stringstream text;
    text << f.rdbuf();
    if (e.path().extension() == ".cu") {
      ++cu;
      EXPECT_EQ(text.str(), bad);
      EXPECT_TRUE(e.path().filename().string().starts_with("cuda-broken_op-"));
    } else if (e.path().extension() == ".log") {
      ++log;
      EXPECT_NE(text.str().find("undeclared_name"), std::string::npos) << text.str();
    }
  }
  EXPECT_EQ(cu, 1);
  EXPECT_EQ(log, 1);
}

TEST(CudaNvrtc, RejectsArchitecturesItCannotTarget) {
  KILN_SKIP_WITHOUT_NVRTC();
  // NVRTC 13 dropped sm_70; the error lists what it supports.
  expect_error([] { jit::cuda::nvrtc_compile(kAddOne, "add_one", jit::cuda::nvrtc_options(70)); },
               "cannot compile for sm_70", "sm_90");
  expect_error([] { jit::cuda::nvrtc_compile(kAddOne, "add_one", {"--std=c++17"}); },
               "no sm_XX architecture");
}

TEST(CudaNvrtc, CompileCubinGoesThroughTheCache) {
  KILN_SKIP_WITHOUT_NVRTC();
#if defined(__SANITIZE_ADDRESS__)
  // Under ctest (not when run by hand) LeakSanitizer's exit-time tracer crashes on a bogus
  // dynamic-TLS range after this test ("DTLS 9 at 0x...212b", GCC 12's libsanitizer): a crash
  // of the checker, not a report; the disk cache itself runs under ASan in CudaDiskCache.*.
  // docs/testing.md "Sanitizers and CI".
  GTEST_SKIP() << "LeakSanitizer's tracer crashes after this test under ctest (docs/testing.md)";
#endif
  TempDir dir;
  jit::cuda::CubinDiskCache cache(dir.path());
  const auto first = jit::cuda::compile_cubin(kAddOne, "add_one", 90, cache);
  expect_cubin(first);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().writes, 1u);
  EXPECT_EQ(jit::cuda::compile_cubin(kAddOne, "add_one", 90, cache), first);
  EXPECT_EQ(cache.stats().memory_hits, 1u);
  // A new process (a fresh cache on the same folder) reads it from disk without compiling.
  jit::cuda::CubinDiskCache again(dir.path());
  EXPECT_EQ(jit::cuda::compile_cubin(kAddOne, "add_one", 90, again), first);
  EXPECT_EQ(again.stats().disk_hits, 1u);
  EXPECT_EQ(again.stats().misses, 0u);
  // Another architecture is another entry.
  expect_cubin(jit::cuda::compile_cubin(kAddOne, "add_one", 80, again));
  EXPECT_EQ(again.stats().misses, 1u);
}

}  // namespace
}  // namespace kiln
