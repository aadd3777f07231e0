// A streaming variant's ordinary-stores twin (jit/cpu/render.h render_cpu_kernel,
// RecordingAssembler::encode_ordinary_twin): the fast path encodes the streaming rendering's
// recording a second time with ordinary stores instead of rendering the ordinary variant, so the
// twin must be that rendering byte for byte: pointwise kernels (one with a call, sin), row
// kernels and a column kernel, Float32 and Float64, on every ISA path the host runs, unrolled and
// pipelined or not; its listing too. Then through the kernel cache: a large launch's store
// trials render one kernel and take its twin, and a forced mode makes no twin it never runs.
#include <gtest/gtest.h>

#include <asmjit/x86.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/render.h"
#include "jit/target.h"
#include "jit_kernel_util.h"
#include "ops/cpu/store_choice.h"
#include "runtime/config.h"
#include "tracer/region_runner.h"

namespace kiln::jit {
namespace {

using kiln::testing::ConfigOverride;
using kiln::testing::supported_jit_isas;

JitIsa isa_of(const std::string& name) {
  return name == "avx512" ? JitIsa::Avx512 : name == "avx2" ? JitIsa::Avx2 : JitIsa::Sse2;
}

struct Named {
  std::string name;
  LoopKernel k;
  bool columns = false;
};

std::vector<Named> kernels() {
  using E = ExprOp;
  std::vector<Named> out;
  for (DType t : {kFloat32, kFloat64}) {
    const std::string ty(dtype_name(t));
    LoopKernel g;  // gelu out of primitives, and a second output
    g.inputs = {t, t};
    {
      const int32_t x = g.load(0);
      const int32_t inner =
          g.binary(E::Mul,
                   g.binary(E::Add, x,
                            g.binary(E::Mul, g.constant(0.044715, t),
                                     g.binary(E::Mul, x, g.binary(E::Mul, x, x)))),
                   g.constant(0.7978845608, t));
      const int32_t y = g.binary(E::Mul, g.binary(E::Mul, x, g.constant(0.5, t)),
                                 g.binary(E::Add, g.unary(E::Tanh, inner), g.constant(1.0, t)));
      g.stores = {y, g.binary(E::Add, y, g.load(1))};
    }
    out.push_back({"gelu " + ty, g});
    LoopKernel s;  // sin calls out past its fast range (call_block)
    s.inputs = {t};
    s.stores = {s.unary(E::Sin, s.load(0))};
    out.push_back({"sin " + ty, s});
    LoopKernel sm = LoopKernel::uniform(t, 1);  // softmax's row kernel, its log-sum-exp too
    {
      const int32_t x = sm.load(0);
      const int32_t m = sm.reduce(E::ReduceMax, x);
      const int32_t e = sm.unary(E::Exp, sm.binary(E::Sub, x, m));
      const int32_t sum = sm.reduce(E::ReduceSum, e);
      sm.stores = {sm.binary(E::Div, e, sum), sm.binary(E::Add, sm.unary(E::Log, sum), m)};
    }
    out.push_back({"softmax " + ty, sm});
    LoopKernel ln = LoopKernel::uniform(t, 2);  // layer norm with a weight
    {
      const int32_t x = ln.load(0), w = ln.load(1);
      const int32_t m = ln.binary(E::Div, ln.reduce(E::ReduceSum, x), ln.row_size(t));
      const int32_t d = ln.binary(E::Sub, x, m);
      const int32_t v =
          ln.binary(E::Div, ln.reduce(E::ReduceSum, ln.binary(E::Mul, d, d)), ln.row_size(t));
      ln.stores = {ln.binary(
          E::Mul,
          ln.binary(E::Mul, d, ln.unary(E::Rsqrt, ln.binary(E::Add, v, ln.constant(1e-5, t)))), w)};
    }
    out.push_back({"layernorm " + ty, ln});
    LoopKernel c = LoopKernel::uniform(t, 2);  // a column sum with an element output
    {
      const int32_t p = c.binary(E::Mul, c.load(0), c.load(1));
      c.stores = {c.reduce(E::ReduceSum, p), p};
    }
    out.push_back({"column sum " + ty, c, true});
  }
  return out;
}

std::vector<unsigned char> code_of(const RenderedKernel& r) {
  const auto* p = reinterpret_cast<const unsigned char*>(r.fn);
  return {p, p + r.code_bytes};
}

TEST(JitStoreTwin, TheTwinIsTheOrdinaryRenderingByteForByte) {
  asmjit::JitRuntime rt;
  int checked = 0;
  for (const Named& n : kernels()) {
    for (const std::string& isa : supported_jit_isas()) {
      for (int unroll : {1, 3}) {
        for (bool pipeline : {true, false}) {
          for (bool listing : {false, true}) {
            KernelVariant v{isa_of(isa), all_contiguous(n.k), true, unroll, n.columns, pipeline};
            RenderedKernel twin;
            const RenderedKernel streaming =
                render_cpu_kernel(rt, n.k, v, listing, RenderPath::Assembler, &twin);
            v.streaming = false;
            const RenderedKernel ordinary =
                render_cpu_kernel(rt, n.k, v, listing, RenderPath::Assembler);
            const std::string what = n.name + " isa " + isa + " unroll " + std::to_string(unroll) +
                                     (pipeline ? "" : " unpipelined");
            ASSERT_NE(twin.fn, nullptr) << what;
            EXPECT_TRUE(twin.assembler && twin.relocatable == streaming.relocatable) << what;
            EXPECT_EQ(code_of(twin), code_of(ordinary)) << what;
            EXPECT_EQ(twin.addresses.size(), ordinary.addresses.size()) << what;
            for (size_t a = 0; a < twin.addresses.size() && a < ordinary.addresses.size(); ++a) {
              EXPECT_EQ(twin.addresses[a].offset, ordinary.addresses[a].offset) << what;
              EXPECT_EQ(twin.addresses[a].target, ordinary.addresses[a].target) << what;
            }
            // The streaming rendering itself differs (its stores, its fence), the twin does not.
            EXPECT_NE(code_of(streaming), code_of(twin)) << what;
            if (listing) {
              EXPECT_EQ(twin.assembly, ordinary.assembly) << what;
              EXPECT_NE(streaming.assembly.find("movnt"), std::string::npos) << what;
              EXPECT_NE(streaming.assembly.find("sfence"), std::string::npos) << what;
              EXPECT_EQ(twin.assembly.find("movnt"), std::string::npos) << what;
              EXPECT_EQ(twin.assembly.find("sfence"), std::string::npos) << what;
            }
            // An ordinary variant has no twin; neither has a rendering asked for none.
            RenderedKernel none;
            const RenderedKernel again =
                render_cpu_kernel(rt, n.k, v, false, RenderPath::Assembler, &none);
            EXPECT_EQ(none.fn, nullptr) << what;
            for (KernelFn fn : {streaming.fn, twin.fn, ordinary.fn, again.fn}) rt.release(fn);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 10 * 8);
}

// The Compiler renders no twin (the launch renders the ordinary variant when it asks for it).
TEST(JitStoreTwin, TheCompilerMakesNoTwin) {
  asmjit::JitRuntime rt;
  const LoopKernel k = kernels().front().k;
  KernelVariant v{JitIsa::Sse2, all_contiguous(k), true, 1};
  RenderedKernel twin;
  const RenderedKernel r = render_cpu_kernel(rt, k, v, false, RenderPath::Compiler, &twin);
  EXPECT_FALSE(r.assembler);
  EXPECT_EQ(twin.fn, nullptr);
  rt.release(r.fn);
}

// Through the cache: a launch large enough to stream tries both kinds of store (store_choice.h);
// under auto the trials run one rendering and its twin, under "on" no twin is made, under "off"
// nothing streams and the ordinary variant is rendered. Every launch stores the reference's bits.
TEST(JitStoreTwin, StoreTrialsRenderOneKernel) {
  constexpr int64_t kN = (int64_t{9} << 20) / 4 + 48;
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> in(static_cast<float*>(std::aligned_alloc(64, kN * 4))),
      out(static_cast<float*>(std::aligned_alloc(64, kN * 4)));
  for (int64_t i = 0; i < kN; ++i) in[i] = static_cast<float>(i % 977) * 0.25f - 100.0f;
  ConfigOverride<std::string> no_disk(config().cache_dir, "");
  // The counters are the process's: no plan of an earlier test may be rendering meanwhile (on
  // the 16-core machine one was: 273 renders counted in the "off" case).
  tracer::wait_for_compiles();
  CpuJitCounters& counters = cpu_jit_counters();
  struct Case {
    const char* mode;
    int64_t twins;
  };
  for (const Case& m : {Case{"auto", 1}, Case{"on", 0}, Case{"off", 0}}) {
    ConfigOverride<std::string> mode(config().jit_streaming, m.mode);
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    const float c = 2.5f + static_cast<float>(m.mode[1]) / 64.0f;  // a new kernel per mode
    k.stores = {k.binary(ExprOp::Sub,
                         k.binary(ExprOp::Mul, k.load(0), k.constant(c, DType::Float32)),
                         k.constant(3.0, DType::Float32))};
    const int64_t kernels0 = counters.kernels.load(), twins0 = counters.twins.load();
    std::shared_ptr<CompiledKernel> kernel = cpu_target().compile(k, CpuLaunchHint{kN, false});
    LaunchArgs la;
    la.sizes = {kN};
    la.ptrs = {reinterpret_cast<char*>(out.get()), reinterpret_cast<char*>(in.get())};
    la.strides = {DimVector{4}, DimVector{4}};
    for (int l = 0; l < 2 + 2 * StoreChoice::kTrials; ++l) {
      std::fill(out.get(), out.get() + kN, -1.0f);
      kernel->launch(la);
      for (int64_t i = 0; i < kN; ++i)
        ASSERT_EQ(out[i], in[i] * c - 3.0f) << m.mode << " launch " << l << " element " << i;
    }
    // The Compiler (KILN_JIT_ASSEMBLER=0: ctest's jit_compiler pass) makes no twin: it renders
    // the ordinary variant when a trial asks for it.
    const int64_t twins = config().jit_assembler ? m.twins : 0;
    EXPECT_EQ(counters.twins.load() - twins0, twins) << m.mode;
    EXPECT_EQ(counters.kernels.load() - kernels0, m.twins - twins + 1) << m.mode << ": renderings";
  }
}

}  // namespace
}  // namespace kiln::jit
