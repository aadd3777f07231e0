// The CPU target's unrolled vector loop (KernelVariant::unroll, KILN_JIT_UNROLL): U vectors per
// iteration with their bodies interleaved, then a one-vector loop and a scalar tail (AVX2, SSE2),
// or one masked vector per iteration (AVX-512; unrolled once: a vector loop and a masked
// tail). Every unroll 1-4 on every ISA path the host runs, at every length
// from 1 to (U + 1) vectors + 1 (so each of the loops runs zero, one and several times and
// every tail length occurs) and at large lengths on one and two threads, against the eager ops on
// the same data, byte for byte (NaN canonicalized): Float32 and Float64 vector-math chains, a
// broadcast operand, and a kernel mixing 1-, 4- and 8-byte types with Bool input and output.
// Also: the rendered code has the loops and interleaving it claims (asm), and the target's choice.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/interleave.h"
#include "jit/cpu/render.h"
#include "jit/target.h"
#include "jit_kernel_util.h"
#include "record_util.h"
#include "runtime/parallel.h"

namespace kiln::jit {
namespace {

using kiln::testing::bytes_of;
using kiln::testing::ConfigOverride;
using kiln::testing::jit_lanes;
using kiln::testing::supported_jit_isas;
using kiln::testing::values;

// Launches `ck` over {n} elements: outputs allocated contiguous here, inputs as given (a
// one-element input is broadcast, stride 0).
std::vector<Tensor> launch(CompiledKernel& ck, const std::vector<Tensor>& ins, int64_t n,
                           std::vector<Scalar> params = {}, int threads = 1) {
  const LoopKernel& k = ck.source();
  LaunchArgs la;
  la.sizes = {n};
  std::vector<Tensor> outs;
  for (int32_t o = 0; o < k.num_outputs(); ++o) {
    outs.push_back(full({n}, -7.0, TensorOptions().dtype(k.output_dtype(o))));
    la.ptrs.push_back(static_cast<char*>(const_cast<void*>(outs.back().raw_data())));
    la.strides.push_back({static_cast<int64_t>(itemsize(k.output_dtype(o)))});
  }
  for (const Tensor& t : ins) {
    la.ptrs.push_back(static_cast<char*>(const_cast<void*>(t.raw_data())));
    la.strides.push_back({t.numel() == 1 ? 0 : static_cast<int64_t>(itemsize(t.dtype()))});
  }
  la.params = std::span<const Scalar>(params.data(), params.size());
  const int saved = config().num_threads;
  set_num_threads(threads);
  ck.launch(la);
  set_num_threads(saved);
  return outs;
}

// gelu (tanh form) out of primitives, as the perf workload writes it, times a broadcast input:
// ((0.5 * x) * (1 + tanh((x + ((0.044715 * x) * x) * x) * 0.79788456))) * s.
LoopKernel gelu_kernel(DType t) {
  LoopKernel k = LoopKernel::uniform(t, 2);
  const int32_t x = k.load(0), s = k.load(1);
  auto c = [&](double v) { return k.constant(v, t); };
  auto mul = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Mul, a, b); };
  auto add = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Add, a, b); };
  const int32_t cube = mul(mul(mul(c(0.044715), x), x), x);
  const int32_t th = k.unary(ExprOp::Tanh, mul(add(x, cube), c(0.79788456)));
  k.stores = {mul(mul(mul(c(0.5), x), add(c(1.0), th)), s)};
  return k;
}
Tensor gelu_eager(const Tensor& x, const Tensor& s) {
  const Tensor inner = (x + 0.044715 * x * x * x) * 0.79788456;
  return 0.5 * x * (1.0 + tanh(inner)) * s.expand(x.sizes());
}

// Bool, Int64 and Float32 inputs, an Int32 param, Float64 / Bool / Int32 outputs, with vector
// math (exp) so that every unroll applies: 8 lanes on AVX-512, Float32 values in half registers.
LoopKernel mixed_kernel() {
  LoopKernel k;
  k.inputs = {kBool, kInt64, kFloat32};
  k.params = {kInt32};
  const int32_t m = k.load(0), i = k.load(1), f = k.load(2), p = k.param(0);
  const int32_t i_plus = k.binary(ExprOp::Add, i, k.cast(p, kInt64));
  const int32_t e = k.unary(ExprOp::Exp, k.cast(f, kFloat64));
  const int32_t sel = k.select(m, k.cast(i_plus, kFloat64), e);
  const int32_t gt = k.binary(ExprOp::Gt, f, k.constant(0.25, kFloat32));
  k.stores = {sel, k.binary(ExprOp::Or, gt, k.unary(ExprOp::Not, m)), k.cast(i, kInt32)};
  return k;
}

std::shared_ptr<CompiledKernel> compile_with(const std::string& isa, int unroll,
                                             const LoopKernel& k) {
  ConfigOverride<std::string> o(config().jit_isa, isa);
  ConfigOverride<int> u(config().jit_unroll, unroll);
  return cpu_target().compile(k);
}

// 1 .. (2 unroll + 2) vectors + 1, then large lengths (odd, and above the parallel grain).
// AVX-512's pipelined loop (a prologue and a drain around it) runs from unroll vectors on, its
// loop once from 2 unroll vectors on.
std::vector<int64_t> lengths(int lanes, int unroll) {
  std::vector<int64_t> n;
  for (int64_t i = 1; i <= (2 * unroll + 2) * lanes + 1; ++i) n.push_back(i);
  for (int64_t big : {int64_t{1000}, int64_t{4099}, kParallelGrain * 3 + 5}) n.push_back(big);
  return n;
}

TEST(JitUnroll, EveryTailEveryUnrollEveryIsaFloat32AndFloat64) {
  for (const std::string& isa : supported_jit_isas())
    for (DType t : {kFloat32, kFloat64})
      for (int unroll = 1; unroll <= 4; ++unroll) {
        auto ck = compile_with(isa, unroll, gelu_kernel(t));
        const int lanes = jit_lanes(isa, static_cast<int>(itemsize(t)));
        for (int64_t n : lengths(lanes, unroll)) {
          const Tensor x = values(t, n, static_cast<int>(n)), s = values(t, 1, 3) * 0.0 + 1.5;
          for (int threads : {1, 2}) {
            if (threads == 2 && n < kParallelGrain) continue;
            EXPECT_EQ(bytes_of(launch(*ck, {x, s}, n, {}, threads)[0]), bytes_of(gelu_eager(x, s)))
                << isa << " " << dtype_name(t) << " unroll " << unroll << " n=" << n << " threads "
                << threads;
          }
        }
      }
}

TEST(JitUnroll, EveryTailEveryUnrollEveryIsaMixedWidths) {
  for (const std::string& isa : supported_jit_isas())
    for (int unroll = 1; unroll <= 4; ++unroll) {
      auto ck = compile_with(isa, unroll, mixed_kernel());
      const int lanes = jit_lanes(isa, 8);
      for (int64_t n : lengths(lanes, unroll)) {
        const Tensor ff = values(kFloat32, n, 4), ii = values(kFloat64, n, 2).to(kInt64);
        for (bool broadcast_mask : {false, true}) {
          const Tensor mask = values(kFloat32, broadcast_mask ? 1 : n, 5) > 0.0;
          const Tensor me = mask.expand({n});
          const std::vector<Tensor> got = launch(*ck, {mask, ii, ff}, n, {Scalar(int64_t{-7})});
          const std::string what = isa + " unroll " + std::to_string(unroll) +
                                   " n=" + std::to_string(n) + (broadcast_mask ? " bcast" : "");
          EXPECT_EQ(bytes_of(got[0]),
                    bytes_of(where(me, (ii + (-7)).to(kFloat64), ff.to(kFloat64).exp())))
              << what;
          EXPECT_EQ(bytes_of(got[1]), bytes_of(logical_or(ff > 0.25, logical_not(me)))) << what;
          EXPECT_EQ(bytes_of(got[2]), bytes_of(ii.to(kInt32))) << what;
        }
      }
    }
}

// The assembly of one rendering of gelu_kernel(Float32), all operands contiguous.
std::string gelu_asm(JitIsa isa, int unroll, bool pipeline = true) {
  asmjit::JitRuntime rt;
  const LoopKernel k = gelu_kernel(kFloat32);
  KernelVariant v{
      isa, std::vector<InnerLayout>(3, InnerLayout::Contiguous), false, unroll, false, pipeline};
  return render_cpu_kernel(rt, k, v, true).assembly;
}

// The rendered code is what the header says: `unroll` bodies in the unrolled loop (none for
// unroll 1) plus one in the one-vector loop plus the tail (one division each: tanh's), and the
// unrolled bodies woven together: their divisions sit within a few instructions of one
// another, not a body apart. AVX-512 pipelined (the default): the prologue holds the bodies'
// heads (no division), the loop and the drain `unroll` tails each. Up to 3 copies pipelined:
// at 4 this kernel's woven copies pass the register budget (PipelinesOnlyWhatFitsTheRegisters
// below) and it takes the plain woven loop.
TEST(JitUnroll, UnrolledBodiesAreRenderedAndInterleaved) {
  if (host_jit_isa() < JitIsa::Avx2) GTEST_SKIP() << "needs AVX2";
  for (JitIsa isa : {JitIsa::Avx512, JitIsa::Avx2})
    for (bool pipeline : {false, true}) {
      if (host_jit_isa() < isa || (pipeline && isa != JitIsa::Avx512)) continue;
      for (int unroll = 1; unroll <= (pipeline ? 3 : 4); ++unroll) {
        const std::string text = gelu_asm(isa, unroll, pipeline);
        std::vector<int> div_lines;
        int line = 0;
        for (size_t at = 0; at < text.size(); ++line) {
          const size_t nl = text.find('\n', at);
          const std::string l = text.substr(at, nl == std::string::npos ? nl : nl - at);
          if (l.find("vdivps") != std::string::npos) div_lines.push_back(line);
          at = nl == std::string::npos ? text.size() : nl + 1;
        }
        // AVX2: the unrolled bodies, the one-vector body and the scalar tail's one-lane body.
        // AVX-512: after the unrolled loop one masked body takes the rest (whole vectors and the
        // tail), so one body fewer (compile time, docs/jit.md); unrolled once, a vector body and
        // the masked tail.
        const int bodies = unroll == 1             ? 2
                           : isa != JitIsa::Avx512 ? unroll + 2
                           : pipeline              ? 2 * unroll + 1
                                                   : unroll + 1;
        ASSERT_EQ(static_cast<int>(div_lines.size()), bodies)
            << jit_isa_name(isa) << " unroll " << unroll << "\n"
            << text;
        if (unroll > 1) {
          EXPECT_LE(div_lines[unroll - 1] - div_lines[0], 2 * (unroll - 1))
              << jit_isa_name(isa) << " unroll " << unroll << ": the copies are not interleaved\n"
              << text;
        }
        if (unroll > 1 && pipeline) {  // the drain's tails are woven too
          EXPECT_LE(div_lines[2 * unroll - 1] - div_lines[unroll], unroll - 1)
              << jit_isa_name(isa) << " unroll " << unroll << "\n"
              << text;
          // The loop carries the next vectors' heads in registers: one vmovaps per value.
          EXPECT_NE(text.find("vmovaps"), std::string::npos) << text;
        }
      }
    }
}

// gelu (erf form) out of primitives: 0.5 * x * (1 + erf(x * 0.70710678)). erf's two
// polynomials keep about 30 constants and 13 values of a copy live at once.
LoopKernel gelu_erf_kernel() {
  LoopKernel k = LoopKernel::uniform(kFloat32, 1);
  const int32_t x = k.load(0);
  auto c = [&](double v) { return k.constant(v, kFloat32); };
  const int32_t e = k.unary(ExprOp::Erf, k.binary(ExprOp::Mul, x, c(0.70710678)));
  k.stores = {
      k.binary(ExprOp::Mul, k.binary(ExprOp::Mul, c(0.5), x), k.binary(ExprOp::Add, c(1.0), e))};
  return k;
}

// AVX-512 software-pipelines an unrolled loop only while its woven copies fit the registers
// (recording_assembler.h kPipelineVectorBudget): erf-form gelu at the target's unroll does
// not (pipelined, it spilled values to stack slots inside the loop and ran 35% slower on the
// Zen 4 VM), and takes the plain woven loop, which keeps every value in a register (no rsp
// operand) and holds unroll + 1 bodies (one sign `vpord` each) instead of 2 unroll + 1; the
// tanh form is pipelined (2 unroll + 1 divisions).
int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JitUnroll, PipelinesOnlyWhatFitsTheRegisters) {
  if (host_jit_isa() < JitIsa::Avx512) GTEST_SKIP() << "needs AVX-512";
  asmjit::JitRuntime rt;
  auto listing = [&](const LoopKernel& k) {
    const KernelVariant v{JitIsa::Avx512, all_contiguous(k),
                          false,          cpu_kernel_unroll(k, JitIsa::Avx512),
                          false,          true};
    EXPECT_EQ(v.unroll, 3);
    return render_cpu_kernel(rt, k, v, true).assembly;
  };
  const std::string erf_form = listing(gelu_erf_kernel());
  EXPECT_EQ(count_of(erf_form, "rsp+") + count_of(erf_form, "[rsp]"), 0) << erf_form;
  EXPECT_EQ(count_of(erf_form, "vpord"), 3 + 1) << erf_form;
  const std::string tanh_form = listing(gelu_kernel(kFloat32));
  EXPECT_EQ(count_of(tanh_form, "vdivps"), 2 * 3 + 1) << tanh_form;
  // The plain loop computes eager's bits (around the unrolled loop's edges, and long).
  ConfigOverride<std::string> o(config().jit_isa, "avx512");
  auto ck = cpu_target().compile(gelu_erf_kernel());
  for (int64_t n : {int64_t{47}, int64_t{48}, int64_t{49}, int64_t{96}, int64_t{4099}}) {
    const Tensor x = values(kFloat32, n, 11);
    EXPECT_EQ(bytes_of(launch(*ck, {x}, n)[0]), bytes_of(0.5 * x * (1.0 + erf(x * 0.70710678))))
        << "n=" << n;
  }
}

// interleave() on hand-made node ranges: straight-line copies are woven round robin (a longer
// copy's rest at the end); a copy holding a label is left exactly as emitted.
std::vector<asmjit::BaseNode*> nodes_after(asmjit::BaseNode* from, size_t count) {
  std::vector<asmjit::BaseNode*> out;
  for (asmjit::BaseNode* n = from->next(); n != nullptr && out.size() < count; n = n->next())
    out.push_back(n);
  return out;
}

TEST(JitUnroll, InterleaveWeavesStraightLineCopiesAndLeavesOthers) {
  for (bool with_label : {false, true}) {
    asmjit::JitRuntime rt;
    asmjit::CodeHolder code;
    code.init(rt.environment());
    asmjit::x86::Compiler cc(&code);
    cc.addFunc(asmjit::FuncSignatureT<void>(asmjit::CallConvId::kHost));
    asmjit::BaseNode* start = cc.cursor();
    std::vector<NodeRange> copies;
    std::vector<std::vector<asmjit::BaseNode*>> emitted(3);
    for (int u = 0; u < 3; ++u) {
      asmjit::BaseNode* before = cc.cursor();
      asmjit::x86::Gp r = cc.newGpq();
      cc.mov(r, u);
      if (with_label && u == 1) cc.bind(cc.newLabel());
      cc.add(r, 1);
      if (u == 2) cc.add(r, 2);  // a longer copy
      copies.emplace_back(before->next(), cc.cursor());
      for (asmjit::BaseNode* n = before->next();; n = n->next()) {
        emitted[u].push_back(n);
        if (n == cc.cursor()) break;
      }
    }
    std::vector<asmjit::BaseNode*> want;
    if (with_label) {
      for (const auto& e : emitted) want.insert(want.end(), e.begin(), e.end());
      EXPECT_FALSE(interleave(cc, copies));
    } else {
      want = {emitted[0][0], emitted[1][0], emitted[2][0], emitted[0][1],
              emitted[1][1], emitted[2][1], emitted[2][2]};
      EXPECT_TRUE(interleave(cc, copies));
      EXPECT_EQ(cc.cursor(), want.back());
    }
    EXPECT_EQ(nodes_after(start, want.size()), want) << "with a label: " << with_label;
    cc.endFunc();
    EXPECT_EQ(cc.finalize(), asmjit::kErrorOk);
  }
}

TEST(JitUnroll, TargetChoosesThreeForVectorMath) {
  LoopKernel add = LoopKernel::uniform(kFloat32, 2);
  add.stores = {add.binary(ExprOp::Add, add.load(0), add.load(1))};
  for (JitIsa isa : {JitIsa::Avx512, JitIsa::Avx2, JitIsa::Sse2}) {
    EXPECT_EQ(cpu_kernel_unroll(gelu_kernel(kFloat32), isa), 3);
    EXPECT_EQ(cpu_kernel_unroll(mixed_kernel(), isa), 3);
    EXPECT_EQ(cpu_kernel_unroll(add, isa), 1);
  }
  // Large kernels stay at 1 (compile time): more vector math, or more expressions, than the caps.
  LoopKernel math = LoopKernel::uniform(kFloat32, 1);
  int32_t v = math.load(0);
  for (int i = 0; i < kUnrollMaxMath; ++i) v = math.unary(ExprOp::Exp, v);
  math.stores = {v};
  EXPECT_EQ(cpu_kernel_unroll(math, JitIsa::Avx512), 3);
  math.stores = {math.unary(ExprOp::Exp, v)};
  EXPECT_EQ(cpu_kernel_unroll(math, JitIsa::Avx512), 1);
  LoopKernel big = LoopKernel::uniform(kFloat32, 1);
  const int32_t x = big.load(0);
  v = big.unary(ExprOp::Tanh, x);
  while (big.exprs.size() < kUnrollMaxExprs) v = big.binary(ExprOp::Add, v, x);
  big.stores = {v};
  EXPECT_EQ(cpu_kernel_unroll(big, JitIsa::Avx512), 3);
  big.stores = {big.binary(ExprOp::Add, v, v)};
  EXPECT_EQ(cpu_kernel_unroll(big, JitIsa::Avx512), 1);
  // Row kernels take kRowUnroll, with vector math or without, but for math on their elements
  // with 16 vector registers (math on a row's value is once per row).
  LoopKernel row = LoopKernel::uniform(kFloat32, 1);
  const int32_t r = row.load(0);
  row.stores = {row.binary(ExprOp::Sub, r, row.reduce(ExprOp::ReduceSum, r))};
  for (JitIsa isa : {JitIsa::Avx512, JitIsa::Avx2, JitIsa::Sse2})
    EXPECT_EQ(cpu_kernel_unroll(row, isa), kRowUnroll);
  row.stores = {row.unary(ExprOp::Exp, row.reduce(ExprOp::ReduceMax, r))};
  EXPECT_EQ(cpu_kernel_unroll(row, JitIsa::Avx2), kRowUnroll);
  LoopKernel sm = LoopKernel::uniform(kFloat32, 1);
  const int32_t y = sm.load(0);
  sm.stores = {
      sm.reduce(ExprOp::ReduceSum,
                sm.unary(ExprOp::Exp, sm.binary(ExprOp::Sub, y, sm.reduce(ExprOp::ReduceMax, y))))};
  EXPECT_EQ(cpu_kernel_unroll(sm, JitIsa::Avx512), kRowUnroll);
  EXPECT_EQ(cpu_kernel_unroll(sm, JitIsa::Avx2), kUnrollMathFewRegisters);
  EXPECT_EQ(cpu_kernel_unroll(sm, JitIsa::Sse2), kUnrollMathFewRegisters);
}

// Bodies that branch or call out (sin/cos) are never unrolled, even when KILN_JIT_UNROLL asks
// for it (jit/cpu/render.h, cpu_kernel_unrolls); pointwise kernels that draw (RandUniform) take
// kUnrollDraw on AVX-512 and 1 on the 16-register ISAs (Philox's state), row kernels that draw
// none.
TEST(JitUnroll, BodiesThatCallAreNotUnrolledDrawingOnesTakeTwoOnAvx512) {
  LoopKernel s = LoopKernel::uniform(kFloat32, 1);
  s.stores = {s.unary(ExprOp::Sin, s.load(0))};
  EXPECT_FALSE(cpu_kernel_unrolls(s));
  EXPECT_EQ(cpu_kernel_unroll(s, JitIsa::Avx512), 1);
  LoopKernel r = LoopKernel::uniform(kFloat32, 1);
  for (int i = 0; i < 4; ++i) r.params.push_back(kInt32);
  r.stores = {r.binary(ExprOp::Mul, r.load(0), r.rand_uniform(0, kFloat32))};
  EXPECT_TRUE(cpu_kernel_unrolls(r));
  EXPECT_EQ(cpu_kernel_unroll(r, JitIsa::Avx512), kUnrollDraw);
  EXPECT_EQ(cpu_kernel_unroll(r, JitIsa::Avx2), 1);
  EXPECT_EQ(cpu_kernel_unroll(r, JitIsa::Sse2), 1);
  r.stores = {r.reduce(ExprOp::ReduceSum, r.stores[0])};
  EXPECT_FALSE(cpu_kernel_unrolls(r));
  EXPECT_TRUE(cpu_kernel_unrolls(gelu_kernel(kFloat32)));
}

// Drawing kernels unrolled: rand and dropout (Philox at the element's row-major index; each
// unrolled copy draws at its own offset) at every unroll 1-4 on every ISA path, at lengths
// around every tail and a long one on two threads, recorded and planned, bitwise equal to eager.
// Giving every copy the first copy's offset fails it.
TEST(JitUnroll, DrawingKernelsAtEveryUnrollMatchEager) {
  ConfigOverride<bool> sync_planning(config().jit_async, false);
  ConfigOverride<int> threshold(config().jit_threshold, -1);
  kiln::testing::JitRestore restore;
  for (const std::string& isa : supported_jit_isas()) {
    ConfigOverride<std::string> o(config().jit_isa, isa);
    for (int unroll = 1; unroll <= 4; ++unroll) {
      ConfigOverride<int> u(config().jit_unroll, unroll);
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{15}, int64_t{17}, int64_t{33}, int64_t{100},
                        int64_t{1031}, kParallelGrain * 3 + 5}) {
        Tensor x;
        {
          kiln::testing::JitMode off(false);
          x = values(kFloat32, n, static_cast<int>(n)) + 0.5;
        }
        auto program = [&] {
          manual_seed(static_cast<uint64_t>(n) + 11);
          return std::vector<Tensor>{dropout(x * 1.5 + 0.25, 0.3, true) * 2.0,
                                     rand({n}) * x + rand({n}, TensorOptions().dtype(kFloat64))};
        };
        std::vector<Tensor> want;
        {
          kiln::testing::JitMode off(false);
          want = program();
        }
        tracer::RegionCache::instance().clear();
        for (int it = 0; it < 2; ++it) {
          std::vector<Tensor> got;
          {
            kiln::testing::JitMode on(true);
            got = program();
            kiln::sync();
          }
          for (size_t i = 0; i < want.size(); ++i)
            EXPECT_EQ(bytes_of(got[i]), bytes_of(want[i]))
                << isa << " unroll " << unroll << " n=" << n << " output " << i << " run " << it;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::jit
