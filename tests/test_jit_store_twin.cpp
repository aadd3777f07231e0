// A streaming variant's ordinary-stores twin (jit/cpu/render.h render_cpu_kernel,
// RecordingAssembler::encode_ordinary_twin): the fast path encodes the streaming rendering's
// recording a second time with ordinary stores instead of rendering the ordinary variant, so the
// twin must be that rendering byte for byte: pointwise kernels (one with a call, sin), row
// kernels and a column kernel, Float32 and Float64, on every ISA path the host runs, unrolled and
// pipelined or not; its listing too. Through the kernel cache (a large launch's store trials
// render one kernel and take its twin; a forced mode makes none): JitStoreChoice.
// KernelLaunchesUnderEachMode.
#include <gtest/gtest.h>

#include <asmjit/x86.h>

#include <cstring>
#include <string>
#include <vector>

#include "jit/cpu/render.h"
#include "jit_kernel_util.h"

namespace kiln::jit {
namespace {

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

}  // namespace
}  // namespace kiln::jit
