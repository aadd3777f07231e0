// The CPU renderer's warm-up (jit/cpu/warm_up.h): started by kiln::init() exactly when the JIT is
// on at start-up, its renders succeed on every ISA path, and they leave no trace in what
// programs and tests observe: the kernel counters, the compile times, the kernel cache, a pending
// injected codegen fault.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/code_memory.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/render_workspace.h"
#include "jit/cpu/sample_kernels.h"
#include "jit/cpu/warm_up.h"
#include "jit_kernel_util.h"
#include "kiln/kiln.h"
#include "record_util.h"
#include "runtime/config.h"
#include "self_child.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

// Run by StartedAtInitExactlyWhenTheJitIsOnAtStartUp in a fresh process, whose first op is this
// test's (in a shared process an earlier test's first op, under its own config().jit, ran init).
TEST(JitWarmUpChild, StartedOrNot) {
  const char* expect = std::getenv("KILN_TEST_WARMUP_EXPECT");
  if (expect == nullptr) GTEST_SKIP() << "run by StartedAtInitExactlyWhenTheJitIsOnAtStartUp";
  (void)(ones({2}) + 1.0);  // the process's first op: init() runs
  EXPECT_EQ(jit::cpu_renderer_warm_up_started(), std::string(expect) == "1");
  tracer::wait_for_compiles();  // the warm-up, when queued, finishes here
}

TEST(JitWarmUp, StartedAtInitExactlyWhenTheJitIsOnAtStartUp) {
  for (const char* env : {"KILN_JIT=1 KILN_JIT_WARMUP=1 KILN_TEST_WARMUP_EXPECT=1",
                          "KILN_JIT=1 KILN_JIT_WARMUP=0 KILN_TEST_WARMUP_EXPECT=0",
                          "KILN_JIT=0 KILN_JIT_WARMUP=1 KILN_TEST_WARMUP_EXPECT=0"}) {
    const testing::SelfChildResult child =
        testing::run_self_as_child(env, "JitWarmUpChild.StartedOrNot");
    EXPECT_EQ(child.status, 0) << child.command;
    EXPECT_EQ(child.completed, 1) << child.command;
  }
}

// The warm-up leaves the workspace it rendered in with recording room for large kernels (its
// pages touched), so that a program's first large kernel does not grow it page by page.
TEST(JitWarmUp, LeavesAWorkspaceWithRoomForLargeKernels) {
  tracer::wait_for_compiles();
  testing::JitMode eager(false);
  EXPECT_GE(jit::run_cpu_renderer_warm_up_now(), 5);
  jit::RenderWorkspace workspace;  // the idle workspace handed back last: the warm-up's
  EXPECT_GE(workspace.assembler().capacity(), jit::kWarmUpReservedInstructions);
}

TEST(JitWarmUp, RendersEverySampleOnEveryIsaAndLeavesNoTrace) {
  tracer::wait_for_compiles();
  testing::JitMode eager(false);
  jit::CpuJitCounters& c = jit::cpu_jit_counters();
  for (const std::string& isa : testing::supported_jit_isas()) {
    testing::ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (bool assembler : {true, false}) {
      testing::ConfigOverride<bool> path(config().jit_assembler, assembler);
      const int64_t kernels = c.kernels.load(), compile_ns = c.compile_ns.load();
      const size_t times = jit::cpu_jit_compile_count();
      jit::inject_cpu_codegen_faults(1);
      // Six renders (five where the column renderer declines a column sum on this ISA).
      EXPECT_GE(jit::run_cpu_renderer_warm_up_now(), 5) << isa << " assembler " << assembler;
      EXPECT_EQ(c.kernels.load(), kernels) << isa;
      EXPECT_EQ(c.compile_ns.load(), compile_ns) << isa;
      EXPECT_EQ(jit::cpu_jit_compile_count(), times) << isa;
      // The fault is still pending: the next real render takes it. A kernel no test renders.
      const jit::LoopKernel k = jit::sample_kernels::axpb(0.390625 + (assembler ? 0.25 : 0.5) +
                                                          (isa == "sse2"   ? 4
                                                           : isa == "avx2" ? 2
                                                                           : 1));
      EXPECT_THROW(jit::cpu_target().compile(k), Error) << isa;
      jit::inject_cpu_codegen_faults(0);
      EXPECT_EQ(c.kernels.load(), kernels) << isa;
      // And nothing the warm-up rendered is cached: the same kernel renders now.
      EXPECT_NO_THROW(jit::cpu_target().compile(k)) << isa;
      EXPECT_EQ(c.kernels.load(), kernels + 1) << isa;
    }
  }
}

// The warm-up renders on the planning thread while a program's own renders run on its threads
// (KILN_JIT_ASYNC=0, or a launch rendering a new layout): both share the workspace pool and the
// JitRuntime. Run under ThreadSanitizer in CI (the tsan preset's filter).
TEST(JitWarmUp, RendersBesideOtherThreadsRenders) {
  tracer::wait_for_compiles();
  testing::JitMode eager(false);
  std::atomic<int> warm{0};
  const int64_t before = jit::cpu_jit_counters().kernels.load();
  std::thread warm_up([&] {
    for (int i = 0; i < 3; ++i) warm += jit::run_cpu_renderer_warm_up_now();
  });
  std::vector<std::shared_ptr<jit::CompiledKernel>> kernels;
  for (int i = 0; i < 12; ++i) {  // constants no other test uses: each a new render
    const double c = 0.7109375 + 0.0078125 * i;
    kernels.push_back(jit::cpu_target().compile(i % 2 ? jit::sample_kernels::softmax_row(c)
                                                      : jit::sample_kernels::gelu(c)));
  }
  warm_up.join();
  EXPECT_GE(warm.load(), 15);
  // Every one of the program's kernels rendered and counted, none of the warm-up's.
  EXPECT_EQ(jit::cpu_jit_counters().kernels.load(), before + 12);
}

// The warm-up populates the code memory's first block in one go (jit/cpu/code_memory.h): found
// whole at the runtime's first allocation, populated wherever the kernel populates memory
// (MADV_POPULATE_WRITE: Linux 5.14+).
TEST(JitWarmUp, PopulatesTheFirstBlockOfCodeMemory) {
  // Whether this kernel populates at all (Linux 5.14+; a sandbox may refuse it): a page of our own.
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  const bool populates = ::madvise(page, 4096, MADV_POPULATE_WRITE) == 0;
  ::munmap(page, 4096);
  if (!populates) GTEST_SKIP() << "madvise(MADV_POPULATE_WRITE) is refused here";
  EXPECT_EQ(jit::prefault_cpu_code_memory(), jit::kFirstBlockBytes);
  EXPECT_EQ(jit::prefault_cpu_code_memory(), jit::kFirstBlockBytes) << "once per process";
}

}  // namespace
}  // namespace kiln
