// The choice between non-temporal and ordinary stores for large CPU kernel outputs
// (jit/cpu/store_choice.h): the measuring sequence with synthetic times, the forced modes, a
// concurrent launch while one is timed, an abandoned trial; then a real kernel over a large
// output launched under each KILN_JIT_STREAMING mode, counting the streaming launches and
// checking that every launch stores the same bits whichever stores it took.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>

#include "expect_error.h"
#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/target.h"
#include "ops/cpu/store_choice.h"
#include "runtime/config.h"
#include "tracer/region_runner.h"

namespace kiln::jit {
namespace {

using kiln::testing::ConfigOverride;
using kiln::testing::expect_error;
using Mode = StoreChoice::Mode;

// Runs the auto sequence up to the decision with the given ns per element of each kind.
int decide(double streaming_ns, double ordinary_ns) {
  StoreChoice c;
  StoreChoice::Pick p = c.next(Mode::Auto);
  EXPECT_TRUE(p.streaming);  // the cold first launch streams, untimed
  EXPECT_FALSE(p.timed);
  for (int i = 0; i < 2 * StoreChoice::kTrials; ++i) {
    p = c.next(Mode::Auto);
    EXPECT_TRUE(p.timed) << "trial " << i;
    EXPECT_EQ(p.streaming, i % 2 == 1) << "trials alternate, ordinary stores first";
    EXPECT_EQ(c.decided(), -1);
    // The later trial of each kind is the faster: the best counts, not the last or the mean.
    const double scale = i < 2 ? 1.5 : 1.0;
    const double ns = (p.streaming ? streaming_ns : ordinary_ns) * scale * 1000;
    EXPECT_EQ(c.record(p.streaming, 1000, static_cast<int64_t>(ns)),
              i == 2 * StoreChoice::kTrials - 1);
  }
  EXPECT_DOUBLE_EQ(c.best_ns_per_element(true), streaming_ns);
  EXPECT_DOUBLE_EQ(c.best_ns_per_element(false), ordinary_ns);
  for (int i = 0; i < 3; ++i) {  // decided: untimed from now on
    p = c.next(Mode::Auto);
    EXPECT_FALSE(p.timed);
    EXPECT_EQ(p.streaming, c.decided() == 1);
  }
  return c.decided();
}

TEST(JitStoreChoice, AutoKeepsTheFasterStores) {
  EXPECT_EQ(decide(0.10, 0.14), 1);
  EXPECT_EQ(decide(0.17, 0.13), 0);
  EXPECT_EQ(decide(0.12, 0.12), 1) << "a tie keeps streaming";
}

TEST(JitStoreChoice, ForcedModesNeverTime) {
  StoreChoice c;
  for (int i = 0; i < 8; ++i) {
    const StoreChoice::Pick on = c.next(Mode::On), off = c.next(Mode::Off);
    EXPECT_TRUE(on.streaming);
    EXPECT_FALSE(on.timed);
    EXPECT_FALSE(off.streaming);
    EXPECT_FALSE(off.timed);
  }
  EXPECT_EQ(c.decided(), -1);
  EXPECT_EQ(StoreChoice::mode_from("auto"), Mode::Auto);
  EXPECT_EQ(StoreChoice::mode_from(""), Mode::Auto);
  EXPECT_EQ(StoreChoice::mode_from("on"), Mode::On);
  EXPECT_EQ(StoreChoice::mode_from("off"), Mode::Off);
  expect_error([] { StoreChoice::mode_from("yes"); }, {"KILN_JIT_STREAMING", "yes", "auto"});
}

TEST(JitStoreChoice, ConcurrentAndAbandonedLaunchesAreNotTrials) {
  StoreChoice c;
  c.next(Mode::Auto);                              // the cold first launch
  const StoreChoice::Pick t = c.next(Mode::Auto);  // a trial, running
  ASSERT_TRUE(t.timed);
  const StoreChoice::Pick other = c.next(Mode::Auto);
  EXPECT_FALSE(other.timed) << "a launch beside a running trial is not timed";
  EXPECT_TRUE(other.streaming);
  c.abandon();  // the trial threw: nothing recorded, the next launch is a trial again
  EXPECT_EQ(c.best_ns_per_element(t.streaming), std::numeric_limits<double>::infinity());
  const StoreChoice::Pick again = c.next(Mode::Auto);
  EXPECT_TRUE(again.timed);
  EXPECT_EQ(again.streaming, t.streaming);
  {  // StoreTrial records a launch that returns and abandons one that unwinds
    const std::string name = "test kernel";
    try {
      const StoreTrial trial(&c, again, 100, name, logging::Subsystem::Jit);
      throw Error("launch failed");
    } catch (const Error&) {
    }
    EXPECT_EQ(c.best_ns_per_element(again.streaming), std::numeric_limits<double>::infinity());
    const StoreChoice::Pick p = c.next(Mode::Auto);
    ASSERT_TRUE(p.timed);
    { const StoreTrial trial(&c, p, 100, name, logging::Subsystem::Jit); }
    EXPECT_LT(c.best_ns_per_element(p.streaming), std::numeric_limits<double>::infinity());
  }
}

// A kernel over a 9 MiB output: each mode's launches stream as it says, and every launch stores
// the same bits (x * c + 1 against the scalar reference). What is rendered: one kernel per mode;
// under auto, whose trials run both kinds of stores, the streaming rendering and its
// ordinary-stores twin (jit/cpu/render.h), or two renderings by the Compiler (KILN_JIT_ASSEMBLER=0:
// ctest's jit_compiler pass), which makes no twin.
TEST(JitStoreChoice, KernelLaunchesUnderEachMode) {
  constexpr int64_t kN =
      (int64_t{9} << 20) / 4 + 48;  // a tail after the vectors (a 64-byte multiple)
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> in(static_cast<float*>(std::aligned_alloc(64, kN * 4))),
      out(static_cast<float*>(std::aligned_alloc(64, kN * 4)));
  for (int64_t i = 0; i < kN; ++i) in[i] = static_cast<float>(i % 977) * 0.25f - 100.0f;
  ConfigOverride<std::string> no_disk(config().cache_dir, "");
  // The counters are the process's: no plan of an earlier test may be rendering meanwhile (on
  // the 16-core machine one was: 273 renders counted in one case).
  tracer::wait_for_compiles();
  CpuJitCounters& counters = cpu_jit_counters();
  constexpr int kLaunches = 2 + 2 * StoreChoice::kTrials + 2;
  struct Case {
    const char* mode;
    int64_t min_streaming, max_streaming;
  };
  // auto: the cold launch and kTrials trials stream; after the decision, all or none.
  for (const Case& m : {Case{"on", kLaunches, kLaunches}, Case{"off", 0, 0},
                        Case{"auto", 1 + StoreChoice::kTrials, kLaunches - StoreChoice::kTrials}}) {
    ConfigOverride<std::string> mode(config().jit_streaming, m.mode);
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    const float c = 1.5f + static_cast<float>(m.mode[1]) / 64.0f;  // a new kernel per mode
    k.stores = {k.binary(ExprOp::Add,
                         k.binary(ExprOp::Mul, k.load(0), k.constant(c, DType::Float32)),
                         k.constant(1.0, DType::Float32))};
    const int64_t kernels0 = counters.kernels.load(), twins0 = counters.twins.load();
    std::shared_ptr<CompiledKernel> kernel = cpu_target().compile(k, CpuLaunchHint{kN, false});
    LaunchArgs la;
    la.sizes = {kN};
    la.ptrs = {reinterpret_cast<char*>(out.get()), reinterpret_cast<char*>(in.get())};
    la.strides = {DimVector{4}, DimVector{4}};
    const int64_t before = counters.streaming_launches.load();
    for (int l = 0; l < kLaunches; ++l) {
      std::fill(out.get(), out.get() + kN, -1.0f);
      kernel->launch(la);
      for (int64_t i = 0; i < kN; ++i)
        ASSERT_EQ(out[i], in[i] * c + 1.0f) << m.mode << " launch " << l << " element " << i;
    }
    const bool twin = std::string(m.mode) == "auto" && config().jit_assembler;
    EXPECT_EQ(counters.twins.load() - twins0, twin ? 1 : 0) << m.mode;
    EXPECT_EQ(counters.kernels.load() - kernels0, std::string(m.mode) == "auto" && !twin ? 2 : 1)
        << m.mode << ": renderings";
    const int64_t streamed = counters.streaming_launches.load() - before;
    EXPECT_GE(streamed, m.min_streaming) << m.mode;
    EXPECT_LE(streamed, m.max_streaming) << m.mode;
    if (std::string(m.mode) == "auto") {
      EXPECT_TRUE(streamed == m.min_streaming || streamed == m.max_streaming)
          << "after the decision every launch takes the same stores: " << streamed;
    }
  }
}

}  // namespace
}  // namespace kiln::jit
