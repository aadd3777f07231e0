// Helpers of the CUDA tests: a temporary folder removed at the end of a scope, and a skip when
// libnvrtc cannot be loaded (the skip names why, so a CI without the toolkit shows it).
#pragma once
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "jit/cuda/nvrtc.h"
#include "runtime/cuda/nvrtc_library.h"

namespace kiln::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "kiln-cuda-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    // A test may leave a folder read-only: give permissions back so it can be removed.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The tests that compile CUDA kernels with NVRTC or run their source on the host (the CUDA
// codegen) test nothing that KILN_JIT or the CPU JIT's ISA changes, and cost about 85 s a pass:
// they run in the KILN_JIT=0 pass of the suite only (tests/CMakeLists.txt runs the binary again
// with KILN_JIT=1 and per lower ISA), and skip, saying so, in the others.
inline bool in_a_cpu_jit_pass() {
  const char* jit = std::getenv("KILN_JIT");
  const char* isa = std::getenv("KILN_JIT_ISA");
  return (jit != nullptr && std::string(jit) == "1") || (isa != nullptr && *isa != 0);
}
#define KILN_CUDA_CODEGEN_TEST_ONCE()                                                     \
  do {                                                                                    \
    if (::kiln::testing::in_a_cpu_jit_pass())                                             \
      GTEST_SKIP() << "CUDA codegen is independent of KILN_JIT and KILN_JIT_ISA: tested " \
                      "in the KILN_JIT=0 pass";                                           \
  } while (0)

#define KILN_SKIP_WITHOUT_NVRTC()                                                           \
  do {                                                                                      \
    if (!::kiln::cuda::nvrtc_status().usable)                                               \
      GTEST_SKIP() << "libnvrtc is not available: " << ::kiln::cuda::nvrtc_status().reason; \
  } while (0)

// Compiles many CUDA sources (each defining the extern "C" kernel names[i]) for sm_90 and
// expects every kernel in the CUBINs: a few NVRTC programs of many kernels each (one namespace
// per source), compiled on parallel threads (NVRTC is single-threaded and costs about half as
// much per kernel in a large program as alone: ~67 against ~140 ms here). labels[i] names
// source i in failures; `program` names the programs.
inline void expect_all_compile_for_sm90(const std::vector<std::string>& sources,
                                        const std::vector<std::string>& names,
                                        const std::vector<std::string>& labels,
                                        const std::string& program) {
  const size_t chunks = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  std::vector<std::string> programs(chunks);
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(sources[i].find("#include"), std::string::npos) << labels[i];
    programs[i % chunks] += fmt::format("namespace k{} {{\n{}\n}}\n", i, sources[i]);
  }
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan the kernels are rendered (above, instrumented) but not compiled: the release
  // stage compiles the same sources, NVRTC itself is not instrumented, and the compile of the
  // row kernels costs minutes of CI's 2 cores (docs/testing.md, "What CI costs").
  std::printf(
      "[   NOTE   ] %s: %zu kernels rendered; their NVRTC compile runs in the release "
      "stage, not under ASan\n",
      program.c_str(), sources.size());
  (void)names;
  return;
#endif
  std::vector<std::future<std::vector<char>>> cubins;
  for (size_t c = 0; c < chunks; ++c)
    cubins.push_back(std::async(std::launch::async, [&, c] {
      return jit::cuda::nvrtc_compile(programs[c], fmt::format("{}_{}", program, c),
                                      jit::cuda::nvrtc_options(90));
    }));
  std::vector<std::string> bytes;
  for (auto& f : cubins) {
    const std::vector<char> cubin = f.get();
    EXPECT_GT(cubin.size(), 1000u);
    bytes.emplace_back(cubin.begin(), cubin.end());
  }
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_NE(bytes[i % chunks].find(names[i] + '\0'), std::string::npos)
        << labels[i] << " is missing";
}

}  // namespace kiln::testing
