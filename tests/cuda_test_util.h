// Helpers of the CUDA tests: a temporary folder removed at the end of a scope, and a skip when
// libnvrtc cannot be loaded (the skip names why, so a CI without the toolkit shows it).
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

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
#define KILN_CUDA_CODEGEN_TEST_ONCE()                                                    \
  do {                                                                                   \
    if (::kiln::testing::in_a_cpu_jit_pass())                                            \
      GTEST_SKIP() << "CUDA codegen is independent of KILN_JIT and KILN_JIT_ISA: tested " \
                      "in the KILN_JIT=0 pass";                                          \
  } while (0)

#define KILN_SKIP_WITHOUT_NVRTC()                                                           \
  do {                                                                                      \
    if (!::kiln::cuda::nvrtc_status().usable)                                               \
      GTEST_SKIP() << "libnvrtc is not available: " << ::kiln::cuda::nvrtc_status().reason; \
  } while (0)

}  // namespace kiln::testing
