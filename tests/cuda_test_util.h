// Helpers of the CUDA tests: a skip when libnvrtc cannot be loaded (the skip names why, so a CI
// without the toolkit shows it).
#pragma once
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "jit/cuda/nvrtc.h"
#include "runtime/cuda/nvrtc_library.h"
#include "suite_passes.h"
#include "temp_dir.h"

namespace kiln::testing {

// The tests that compile CUDA kernels with NVRTC or run their source on the host (the CUDA
// codegen) test nothing that KILN_JIT or the CPU JIT's ISA changes, and cost about 85 s a pass.
#define KILN_CUDA_CODEGEN_TEST_ONCE() KILN_TEST_IN_THE_KILN_JIT_0_PASS_ONLY("CUDA codegen")

#define KILN_SKIP_WITHOUT_NVRTC()                                                           \
  do {                                                                                      \
    if (!::kiln::cuda::nvrtc_status().usable)                                               \
      GTEST_SKIP() << "libnvrtc is not available: " << ::kiln::cuda::nvrtc_status().reason; \
  } while (0)

// PTX of `source` for compute_<sm> (NVRTC's front end and NVVM, no ptxas), or a test failure
// with NVRTC's log. The library compiles to CUBINs only (jit/cuda/nvrtc.h); this is the tests'.
inline std::string nvrtc_ptx(const std::string& source, const std::string& program, int sm) {
  const auto& api = cuda::nvrtc();
  cuda::nvrtcProgram p = nullptr;
  if (api.nvrtcCreateProgram(&p, source.c_str(), (program + ".cu").c_str(), 0, nullptr, nullptr) !=
      cuda::kNvrtcSuccess) {
    ADD_FAILURE() << program << ": nvrtcCreateProgram failed";
    return {};
  }
  std::vector<std::string> options = jit::cuda::nvrtc_options(sm);
  options.front() = fmt::format("--gpu-architecture=compute_{}", sm);
  // NVVM's optimizations off (NVRTC 13 has the switch; older ones keep the default): this PTX
  // only shows that a source compiles and lowers, and the optimizer was most of its cost
  // (CudaReduceRender's 71 row kernels: 74 -> 24 s, 2026-11-29, Intel VM). The CUBIN jobs and the
  // GPU runs keep the runtime's options.
  if (cuda::nvrtc_status().major >= 13) options.push_back("--Ofast-compile=max");
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  std::string ptx;
  if (api.nvrtcCompileProgram(p, int(opts.size()), opts.data()) != cuda::kNvrtcSuccess) {
    size_t n = 0;
    api.nvrtcGetProgramLogSize(p, &n);
    std::string log(n, '\0');
    api.nvrtcGetProgramLog(p, log.data());
    ADD_FAILURE() << program << " does not compile for compute_" << sm << ":\n"
                  << log.substr(0, 4000);
  } else {
    size_t n = 0;
    api.nvrtcGetPTXSize(p, &n);
    ptx.assign(n, '\0');
    api.nvrtcGetPTX(p, ptx.data());
  }
  api.nvrtcDestroyProgram(&p);
  return ptx;
}

// Compiles many CUDA sources (each defining the extern "C" kernel names[i]) for sm_90 and
// expects every kernel in the output. labels[i] names source i in failures; `program` names the
// NVRTC programs. Every source goes through NVRTC's front end and NVVM to PTX (compute_90): where
// a dtype, an op or a shape class breaks the source, it fails there. Every 8th source also goes
// through ptxas to a CUBIN for sm_90 (the step the runtime adds; the GPU runs of docs/cuda.md
// compile and launch every kernel class). Measured on CI's kind of VM (2026-11-29), per row
// kernel: ~0.7 s to PTX and ~1.7 s to a CUBIN in programs of 4, more per kernel in larger ones
// (16 kernels: 1.0 and 2.2 s; NVVM's work grows faster than the program). The sweep of every row
// kernel to CUBINs, in two programs, took 133 s alone (docs/testing.md "CI at 45 minutes").
// Programs of 4 sources (one namespace each), on hardware_concurrency threads.
inline void expect_all_compile_for_sm90(const std::vector<std::string>& sources,
                                        const std::vector<std::string>& names,
                                        const std::vector<std::string>& labels,
                                        const std::string& program) {
  constexpr size_t kCubinEvery = 8, kPerProgram = 4;
  struct Job {
    bool cubin;
    std::vector<size_t> members;
    std::string text, output;
  };
  std::vector<Job> jobs;
  auto add = [&](bool cubin, size_t i) {
    if (jobs.empty() || jobs.back().cubin != cubin || jobs.back().members.size() == kPerProgram)
      jobs.push_back({cubin, {}, {}, {}});
    jobs.back().members.push_back(i);
    jobs.back().text += fmt::format("namespace k{} {{\n{}\n}}\n", i, sources[i]);
  };
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(sources[i].find("#include"), std::string::npos) << labels[i];
    add(false, i);
  }
  for (size_t i = 0; i < sources.size(); i += kCubinEvery) add(true, i);
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
  std::atomic<size_t> next{0};
  std::vector<std::future<void>> workers;
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  for (size_t w = 0; w < threads; ++w)
    workers.push_back(std::async(std::launch::async, [&] {
      for (size_t j = next++; j < jobs.size(); j = next++) {
        Job& job = jobs[j];
        const std::string name = fmt::format("{}_{}", program, j);
        if (!job.cubin) {
          job.output = nvrtc_ptx(job.text, name, 90);
          continue;
        }
        const std::vector<char> cubin =
            jit::cuda::nvrtc_compile(job.text, name, jit::cuda::nvrtc_options(90));
        job.output.assign(cubin.begin(), cubin.end());
      }
    }));
  for (auto& w : workers) w.get();
  size_t ptx_kernels = 0, cubin_kernels = 0;
  for (const Job& job : jobs) {
    for (size_t i : job.members) {
      // PTX declares `.entry name(`; a CUBIN's string table holds the name NUL-terminated.
      const std::string key = job.cubin ? names[i] + '\0' : ".entry " + names[i] + "(";
      EXPECT_NE(job.output.find(key), std::string::npos)
          << labels[i] << " is missing from the " << (job.cubin ? "CUBIN" : "PTX");
    }
    (job.cubin ? cubin_kernels : ptx_kernels) += job.members.size();
  }
  EXPECT_EQ(ptx_kernels, sources.size());
  EXPECT_EQ(cubin_kernels, (sources.size() + kCubinEvery - 1) / kCubinEvery);
}

}  // namespace kiln::testing
