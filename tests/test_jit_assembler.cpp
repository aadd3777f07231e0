// The CPU target's fast path (jit/cpu/recording_assembler.h, reg_alloc.h): pointwise kernels
// recorded on virtual registers, assigned registers by a linear scan and encoded by asmjit's
// Assembler, against the same kernels rendered by asmjit's Compiler (KILN_JIT_ASSEMBLER=0). The
// two renderings run the same instructions on other registers, so their outputs must be the same
// bytes, NaNs included: every ISA path the host runs, unroll 1 to 4, contiguous, broadcast and
// strided operands, lengths that run every loop zero, one and several times, two threads.
// Also: the fast path is taken (gelu), constants past the register file are demoted to memory
// and values, pointers and masks spilled to the stack and still right, a render the fast path
// gives up falls back to the Compiler and is right, and kernels with calls (sin, cos) and loops
// (integer pow) take the fast path, the same bytes as the Compiler's.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/render.h"
#include "jit/target.h"
#include "jit_kernel_util.h"
#include "record_util.h"
#include "runtime/parallel.h"
#include "suite_passes.h"
#include "tracer/region_runner.h"

namespace kiln::jit {
namespace {

using kiln::testing::ConfigOverride;
using kiln::testing::jit_lanes;
using kiln::testing::supported_jit_isas;
using kiln::testing::values;

// `k` (one input, one output, contiguous) renders on the Assembler path for `isa` (it does not
// give up and fall back to the Compiler).
void expect_assembler_renders(asmjit::JitRuntime& rt, const LoopKernel& k, const std::string& isa) {
  const JitIsa ji = isa == "avx512" ? JitIsa::Avx512 : isa == "avx2" ? JitIsa::Avx2 : JitIsa::Sse2;
  const KernelVariant var{ji, std::vector<InnerLayout>(2, InnerLayout::Contiguous)};
  const RenderedKernel r = render_cpu_kernel(rt, k, var, false, RenderPath::Assembler);
  EXPECT_TRUE(r.assembler) << isa;
  rt.release(r.fn);
}

// Launches `ck` over {rows, n}: outputs contiguous, input j as `layout[j]` says ('c' contiguous,
// 'b' broadcast along the rows, 's' strided: every other element).
std::vector<Tensor> launch(CompiledKernel& ck, const std::string& layout, int64_t rows, int64_t n,
                           const std::vector<Scalar>& params, int threads) {
  const LoopKernel& k = ck.source();
  LaunchArgs la;
  la.sizes = {rows, n};
  std::vector<Tensor> keep, outs;
  for (int32_t o = 0; o < k.num_outputs(); ++o) {
    outs.push_back(full({rows, n}, -7.0, TensorOptions().dtype(k.output_dtype(o))));
    la.ptrs.push_back(static_cast<char*>(const_cast<void*>(outs.back().raw_data())));
    const int64_t es = static_cast<int64_t>(itemsize(k.output_dtype(o)));
    la.strides.push_back({n * es, es});
  }
  for (int32_t j = 0; j < k.num_inputs(); ++j) {
    const DType t = k.inputs[j];
    const int64_t es = static_cast<int64_t>(itemsize(t));
    const char l = layout[static_cast<size_t>(j)];
    keep.push_back(values(t, l == 'b' ? rows : rows * n * (l == 's' ? 2 : 1), 3 + 7 * j));
    la.ptrs.push_back(static_cast<char*>(const_cast<void*>(keep.back().raw_data())));
    if (l == 'b')
      la.strides.push_back({es, 0});
    else if (l == 's')
      la.strides.push_back({2 * n * es, 2 * es});
    else
      la.strides.push_back({n * es, es});
  }
  la.params = std::span<const Scalar>(params.data(), params.size());
  const int saved = config().num_threads;
  set_num_threads(threads);
  ck.launch(la);
  set_num_threads(saved);
  return outs;
}

std::shared_ptr<CompiledKernel> compile_with(const std::string& isa, int unroll, bool assembler,
                                             const LoopKernel& k) {
  ConfigOverride<std::string> o(config().jit_isa, isa);
  ConfigOverride<int> u(config().jit_unroll, unroll);
  ConfigOverride<bool> a(config().jit_assembler, assembler);
  return cpu_target().compile(k);
}

// The kernels compared: vector math of every kind the fast path takes, integers, casts, masks,
// Bool operands, params and random draws.
struct Case {
  std::string name;
  LoopKernel k;
  std::vector<Scalar> params;
};

LoopKernel math_kernel(DType t, std::vector<ExprOp> ops) {
  LoopKernel k = LoopKernel::uniform(t, 2);
  const int32_t x = k.load(0), y = k.load(1);
  int32_t v = k.binary(ExprOp::Add, k.binary(ExprOp::Mul, x, k.constant(0.75, t)), y);
  std::vector<int32_t> outs;
  for (ExprOp op : ops) outs.push_back(k.unary(op, v));
  k.stores = outs;
  return k;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  using E = ExprOp;
  for (DType t : {kFloat32, kFloat64}) {
    const std::string s = t == kFloat32 ? "f32" : "f64";
    out.push_back({"exp_log_" + s, math_kernel(t, {E::Exp, E::Log, E::Log1p}), {}});
    out.push_back({"expm1_tanh_" + s, math_kernel(t, {E::Expm1, E::Tanh, E::Sigmoid}), {}});
    out.push_back({"silu_erf_" + s, math_kernel(t, {E::Silu, E::Erf}), {}});
    out.push_back({"gelu_" + s, math_kernel(t, {E::Gelu, E::GeluTanh}), {}});
    // The exact reduction's call (3e9 among the inputs: huge lanes), with values live across
    // it (exp's and tanh's results, computed before it, stored after it).
    out.push_back({"sin_cos_" + s, math_kernel(t, {E::Exp, E::Tanh, E::Sin, E::Cos}), {}});
    out.push_back({"simple_" + s,
                   math_kernel(t, {E::Neg, E::Abs, E::Sqrt, E::Rsqrt, E::Reciprocal, E::Square,
                                   E::Relu, E::Sign, E::Floor, E::Ceil, E::Round}),
                   {}});
    LoopKernel p = LoopKernel::uniform(t, 2, 1);
    const int32_t x = p.load(0), y = p.load(1);
    p.stores = {p.binary(E::Pow, x, y), p.binary(E::Maximum, x, p.param(0)),
                p.binary(E::Minimum, y, x), p.binary(E::Div, x, y)};
    out.push_back({"pow_minmax_" + s, p, {Scalar(1.5)}});
    LoopKernel r = LoopKernel::uniform(t, 1, 4);
    r.params = {kInt32, kInt32, kInt32, kInt32};
    r.stores = {r.binary(E::Add, r.rand_uniform(0, t), r.load(0))};
    out.push_back(
        {"rand_" + s,
         r,
         {Scalar(int64_t{123}), Scalar(int64_t{4}), Scalar(int64_t{-3}), Scalar(int64_t{0})}});
  }
  for (DType t : {kInt32, kInt64}) {
    LoopKernel k = LoopKernel::uniform(t, 2);
    const int32_t a = k.load(0), b = k.load(1);
    k.stores = {k.binary(E::Mul, a, b),     k.binary(E::Sub, k.unary(E::Neg, a), b),
                k.unary(E::Abs, a),         k.unary(E::Sign, b),
                k.binary(E::Maximum, a, b), k.binary(E::Le, a, b)};
    out.push_back({std::string("int_") + (t == kInt32 ? "32" : "64"), k, {}});
    LoopKernel p = LoopKernel::uniform(t, 2);  // a loop in the body, exponents up to 1e9
    p.stores = {p.binary(E::Pow, p.load(0), p.load(1))};
    out.push_back({std::string("int_pow_") + (t == kInt32 ? "32" : "64"), p, {}});
  }
  {  // every cast among the numeric types (Int64 <-> floats on the stack on AVX2 and SSE2)
    LoopKernel k;
    k.inputs = {kBool, kInt64, kFloat32, kInt32, kFloat64};
    k.params = {kInt32};
    const int32_t m = k.load(0), i = k.load(1), f = k.load(2), j = k.load(3), d = k.load(4);
    const int32_t i_plus = k.binary(E::Add, i, k.cast(k.param(0), kInt64));
    const int32_t sel = k.select(m, k.cast(i_plus, kFloat64), k.unary(E::Exp, k.cast(f, kFloat64)));
    const int32_t gt = k.binary(E::Gt, f, k.constant(0.25, kFloat32));
    k.stores = {sel,
                k.binary(E::Or, gt, k.unary(E::Not, m)),
                k.cast(i, kInt32),
                k.cast(f, kInt64),
                k.cast(d, kInt64),
                k.cast(i, kFloat32),
                k.cast(k.binary(E::Add, j, k.cast(f, kInt32)), kFloat64),
                k.cast(d, kBool),
                k.cast(m, kFloat32)};
    out.push_back({"mixed", k, {Scalar(int64_t{5})}});
  }
  {  // 40 distinct constants live through the loops: more than the vector registers hold
    LoopKernel k = LoopKernel::uniform(kFloat32, 1);
    int32_t v = k.load(0);
    for (int c = 0; c < 40; ++c)
      v = k.binary(c % 2 ? E::Mul : E::Add, v, k.constant(1.0 + c / 64.0, kFloat32));
    k.stores = {v};
    out.push_back({"many_constants", k, {}});
  }
  {  // 40 constants as first operands (Horner's `c * x`), commuted into the r/m slot where
     // they are demoted; a NaN constant whose sign differs from the inputs' NaNs is not (with
     // two NaN operands the first one's bits come out)
    LoopKernel k = LoopKernel::uniform(kFloat32, 1);
    const int32_t x = k.load(0);
    int32_t v = x;
    for (int c = 0; c < 40; ++c)
      v = k.binary(c % 2 ? E::Mul : E::Add, k.constant(1.0 + c / 64.0, kFloat32), v);
    const double nan = -std::numeric_limits<double>::quiet_NaN();
    k.stores = {v, k.binary(E::Mul, k.constant(nan, kFloat32), x),
                k.binary(E::Add, k.constant(nan, kFloat32), x)};
    out.push_back({"many_constants_first", k, {}});
  }
  return out;
}

// Assembler and Compiler renderings give the same bytes, for every case, ISA, unroll, layout.
TEST(JitAssembler, SameBytesAsTheCompiler) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  const int64_t before = cpu_jit_counters().assembled.load();
  for (const Case& c : cases()) {
    for (const std::string& isa : supported_jit_isas()) {
      for (int unroll : {0, 1, 2, 4}) {
        auto fast = compile_with(isa, unroll, true, c.k);
        auto slow = compile_with(isa, unroll, false, c.k);
        const int lanes = jit_lanes(isa, 8);
        for (const std::string& layout :
             {std::string(8, 'c'), std::string("b") + std::string(7, 'c'),
              std::string("s") + std::string(7, 'c')}) {
          for (int64_t n : {int64_t{1}, int64_t{lanes - 1}, int64_t{3 * lanes + 1},
                            int64_t{11 * lanes + 5}, int64_t{777}}) {
            if (n < 1) continue;
            const int threads = n > 500 ? 2 : 1;
            const std::vector<Tensor> a = launch(*fast, layout, 3, n, c.params, threads);
            const std::vector<Tensor> b = launch(*slow, layout, 3, n, c.params, threads);
            for (size_t o = 0; o < a.size(); ++o) {
              const auto* pa = static_cast<const unsigned char*>(a[o].raw_data());
              const auto* pb = static_cast<const unsigned char*>(b[o].raw_data());
              const size_t bytes = static_cast<size_t>(a[o].numel()) * itemsize(a[o].dtype());
              ASSERT_TRUE(std::equal(pa, pa + bytes, pb))
                  << c.name << " output " << o << " isa " << isa << " unroll " << unroll
                  << " layout " << layout << " n " << n;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cpu_jit_counters().assembled.load(), before);
}

// Row kernels (render_reduce.h) both ways: layer norm's two sums, softmax's max, sum and
// stashed exps, a product, a min with NaNs, and argmax (ReduceFirst) on every ISA, rows of
// lengths around the lanes, byte for byte.
TEST(JitAssembler, RowKernelsSameBytesAsTheCompiler) {
  using E = ExprOp;
  std::vector<std::pair<std::string, LoopKernel>> kernels;
  for (DType t : {kFloat32, kFloat64}) {
    LoopKernel ln = LoopKernel::uniform(t, 2);
    {
      const int32_t x = ln.load(0), g = ln.load(1);
      const int32_t m = ln.binary(E::Div, ln.reduce(E::ReduceSum, x), ln.row_size(t));
      const int32_t d = ln.binary(E::Sub, x, m);
      const int32_t v =
          ln.binary(E::Div, ln.reduce(E::ReduceSum, ln.binary(E::Mul, d, d)), ln.row_size(t));
      const int32_t r = ln.unary(E::Rsqrt, ln.binary(E::Add, v, ln.constant(1e-5, t)));
      ln.stores = {ln.binary(E::Mul, ln.binary(E::Mul, d, r), g), m};
    }
    kernels.emplace_back("layernorm", ln);
    LoopKernel sm = LoopKernel::uniform(t, 2);
    {
      const int32_t x = sm.load(0);
      const int32_t m = sm.reduce(E::ReduceMax, x);
      const int32_t e = sm.unary(E::Exp, sm.binary(E::Sub, x, m));
      const int32_t s = sm.reduce(E::ReduceSum, e);
      sm.stores = {sm.binary(E::Div, e, s), sm.binary(E::Add, sm.unary(E::Log, s), m)};
    }
    kernels.emplace_back("softmax", sm);
    LoopKernel pm = LoopKernel::uniform(t, 2);
    {
      const int32_t x = pm.load(0), c = pm.load(1);
      const int32_t mn = pm.reduce(E::ReduceMin, pm.binary(E::Mul, x, c));
      const int32_t first = pm.reduce_first(pm.cast(pm.binary(E::Eq, x, mn), t));
      pm.stores = {pm.reduce(E::ReduceProd, pm.unary(E::Tanh, x)), mn, first};
    }
    kernels.emplace_back("prod_min_first", pm);
    LoopKernel mk;  // a masked softmax times 3: a Bool input read along the row
    mk.inputs = {t, kBool};
    {
      const int32_t x = mk.binary(E::Mul, mk.load(0), mk.constant(0.125, t));
      const int32_t v = mk.select(mk.load(1), mk.constant(-INFINITY, t), x);
      const int32_t e = mk.unary(E::Exp, mk.binary(E::Sub, v, mk.reduce(E::ReduceMax, v)));
      const int32_t r = mk.binary(E::Div, mk.constant(1.0, t), mk.reduce(E::ReduceSum, e));
      mk.stores = {mk.binary(E::Mul, mk.binary(E::Mul, e, r), mk.constant(3.0, t))};
    }
    kernels.emplace_back("masked_softmax", mk);
  }
  for (const auto& [name, k] : kernels) {
    for (const std::string& isa : supported_jit_isas()) {
      auto fast = compile_with(isa, 0, true, k);
      auto slow = compile_with(isa, 0, false, k);
      for (int64_t n :
           {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{33}, int64_t{129}, int64_t{1000}}) {
        const int64_t rows = 3;
        const Tensor x = values(k.inputs[0], rows * n, static_cast<int>(n));
        const bool along = k.inputs[1] == kBool;  // the second input along the row too
        const Tensor c = values(k.inputs[1], along ? rows * n : rows, 11);
        std::vector<std::vector<unsigned char>> got[2];
        for (int w = 0; w < 2; ++w) {
          LaunchArgs la;
          la.sizes = {rows, n};
          la.reduced_dims = 1;
          std::vector<Tensor> outs;
          for (int32_t o = 0; o < k.num_outputs(); ++o) {
            const bool row = k.row_values()[k.stores[o]];
            const DType t = k.output_dtype(o);
            const int64_t es = static_cast<int64_t>(itemsize(t));
            outs.push_back(full(row ? std::vector<int64_t>{rows, 1} : std::vector<int64_t>{rows, n},
                                -7.0, TensorOptions().dtype(t)));
            la.ptrs.push_back(static_cast<char*>(const_cast<void*>(outs.back().raw_data())));
            la.strides.push_back(row ? DimVector{es, 0} : DimVector{n * es, es});
          }
          const int64_t es = static_cast<int64_t>(itemsize(x.dtype()));
          la.ptrs.push_back(static_cast<char*>(const_cast<void*>(x.raw_data())));
          la.strides.push_back({n * es, es});
          la.ptrs.push_back(static_cast<char*>(const_cast<void*>(c.raw_data())));
          const int64_t ces = static_cast<int64_t>(itemsize(c.dtype()));
          la.strides.push_back(along ? DimVector{n * ces, ces} : DimVector{ces, 0});
          (w == 0 ? fast : slow)->launch(la);
          for (const Tensor& o : outs) {
            const auto* p = static_cast<const unsigned char*>(o.raw_data());
            got[w].emplace_back(p, p + o.numel() * static_cast<int64_t>(itemsize(o.dtype())));
          }
        }
        for (size_t o = 0; o < got[0].size(); ++o)
          for (size_t b = 0; b < got[0][o].size(); b += 4)
            if (std::memcmp(&got[0][o][b], &got[1][o][b], 4) != 0) {
              float fa, fb;
              std::memcpy(&fa, &got[0][o][b], 4);
              std::memcpy(&fb, &got[1][o][b], 4);
              ADD_FAILURE() << "first difference: output " << o << " word " << b / 4
                            << " (as float32) " << fa << " vs " << fb;
              break;
            }
        ASSERT_EQ(got[0], got[1]) << name << " " << dtype_name(k.inputs[0]) << " isa " << isa
                                  << " n " << n;
      }
    }
  }
}

// Column kernels (render_cols.h) both ways: a sum, a product, max and min with NaNs, of the
// input and of a prologue with an operand broadcast over the rows, with an element store, over
// [A, N, C] reducing N, on every ISA, byte for byte.
TEST(JitAssembler, ColumnKernelsSameBytesAsTheCompiler) {
  for (DType t : {kFloat32, kFloat64}) {
    for (ExprOp op :
         {ExprOp::ReduceSum, ExprOp::ReduceProd, ExprOp::ReduceMax, ExprOp::ReduceMin}) {
      LoopKernel k = LoopKernel::uniform(t, 2);
      const int32_t x = k.load(0), w = k.load(1);
      const int32_t p = k.binary(ExprOp::Mul, x, w);
      k.stores = {k.reduce(op, x), k.reduce(op, k.unary(ExprOp::Tanh, p)), p};
      for (const std::string& isa : supported_jit_isas()) {
        std::shared_ptr<CompiledKernel> fast, slow;
        {
          ConfigOverride<bool> c(config().jit_assembler, false);
          ConfigOverride<std::string> o(config().jit_isa, isa);
          slow = cpu_target().compile(k, CpuLaunchHint{0, true});
        }
        {
          ConfigOverride<std::string> o(config().jit_isa, isa);
          fast = cpu_target().compile(k, CpuLaunchHint{0, true});
        }
        for (int64_t c : {int64_t{16}, int64_t{23}, int64_t{70}, int64_t{300}}) {
          const int64_t a = 2, n = 37;
          const int64_t es = static_cast<int64_t>(itemsize(t));
          const Tensor xs = values(t, a * n * c, static_cast<int>(c)), ws = values(t, c, 5);
          std::vector<std::vector<unsigned char>> got[2];
          for (int which = 0; which < 2; ++which) {
            LaunchArgs la;
            la.sizes = {a, n, c};
            la.reduced_dims = 1;
            la.inner_dims = 1;
            std::vector<Tensor> outs;
            for (bool row : {true, true, false}) {
              outs.push_back(
                  full(row ? std::vector<int64_t>{a, 1, c} : std::vector<int64_t>{a, n, c}, -7.0,
                       TensorOptions().dtype(t)));
              la.ptrs.push_back(static_cast<char*>(const_cast<void*>(outs.back().raw_data())));
              la.strides.push_back(row ? DimVector{c * es, 0, es}
                                       : DimVector{n * c * es, c * es, es});
            }
            la.ptrs.push_back(static_cast<char*>(const_cast<void*>(xs.raw_data())));
            la.strides.push_back({n * c * es, c * es, es});
            la.ptrs.push_back(static_cast<char*>(const_cast<void*>(ws.raw_data())));
            la.strides.push_back({0, 0, es});
            (which == 0 ? fast : slow)->launch(la);
            for (const Tensor& o : outs) {
              const auto* q = static_cast<const unsigned char*>(o.raw_data());
              got[which].emplace_back(q, q + o.numel() * es);
            }
          }
          ASSERT_EQ(got[0], got[1])
              << expr_op_name(op) << " " << dtype_name(t) << " isa " << isa << " columns " << c;
        }
      }
    }
  }
}

// gelu's kernel (the perf workload's) takes the fast path on every ISA, unrolled or not, and its
// listing (KILN_DUMP=asm) is the Assembler's.
TEST(JitAssembler, GeluTakesTheFastPath) {
  asmjit::JitRuntime rt;
  const LoopKernel k = math_kernel(kFloat32, {ExprOp::GeluTanh});
  for (const std::string& name : supported_jit_isas()) {
    const JitIsa isa = name == "avx512" ? JitIsa::Avx512
                       : name == "avx2" ? JitIsa::Avx2
                                        : JitIsa::Sse2;
    for (int unroll : {1, 3}) {
      const KernelVariant v{isa, std::vector<InnerLayout>(3, InnerLayout::Contiguous), false,
                            unroll};
      const RenderedKernel r = render_cpu_kernel(rt, k, v, true);
      EXPECT_TRUE(r.assembler) << name << " unroll " << unroll << ": " << r.fallback;
      EXPECT_TRUE(r.fallback.empty()) << r.fallback;
      EXPECT_NE(r.assembly.find(isa == JitIsa::Sse2 ? "divps" : "vdivps"), std::string::npos);
      EXPECT_NE(r.assembly.find("ret"), std::string::npos);
      rt.release(r.fn);
    }
  }
}

// A kernel whose loop body is the first to read the parameters (x * p, p a scalar argument read
// through `params`) takes the fast path, pipelined on AVX-512 too: the argument register is no
// value made by the first unrolled copy (pipeline() once took it for one, found the copies
// different and sent the kernel to the Compiler).
TEST(JitAssembler, APipelinedKernelReadingAParameterTakesTheFastPath) {
  asmjit::JitRuntime rt;
  for (DType t : {kFloat32, kFloat64}) {
    LoopKernel k = LoopKernel::uniform(t, 1, 1);
    k.stores = {k.binary(ExprOp::Mul, k.load(0), k.param(0))};
    for (const std::string& name : supported_jit_isas()) {
      const JitIsa isa = name == "avx512" ? JitIsa::Avx512
                         : name == "avx2" ? JitIsa::Avx2
                                          : JitIsa::Sse2;
      for (int unroll : {1, 3, 4}) {
        const KernelVariant v{isa, std::vector<InnerLayout>(2, InnerLayout::Contiguous), false,
                              unroll};
        const RenderedKernel r = render_cpu_kernel(rt, k, v, false);
        EXPECT_TRUE(r.assembler) << name << " unroll " << unroll << ": " << r.fallback;
        EXPECT_TRUE(r.fallback.empty()) << name << " unroll " << unroll << ": " << r.fallback;
        rt.release(r.fn);
      }
    }
  }
}

// A kernel with 40 vector values live at once needs more vector registers than any ISA has:
// the fast path spills some to stack slots (the Compiler would too) and the results are the
// float arithmetic's.
TEST(JitAssembler, TooManyLiveValuesAreSpilled) {
  LoopKernel k = LoopKernel::uniform(kFloat32, 1);
  const int32_t x = k.load(0);
  std::vector<int32_t> v;
  for (int c = 0; c < 40; ++c) v.push_back(k.binary(ExprOp::Mul, x, k.constant(1 + c, kFloat32)));
  int32_t sum = v[0];
  for (int c = 1; c < 40; ++c) sum = k.binary(ExprOp::Add, sum, v[c]);
  k.stores = {sum};
  asmjit::JitRuntime rt;
  for (const std::string& isa : supported_jit_isas()) {
    expect_assembler_renders(rt, k, isa);
    auto ck = compile_with(isa, 0, true, k);
    const std::vector<Tensor> out = launch(*ck, "c", 2, 100, {}, 1);
    const Tensor in = values(kFloat32, 200, 3);
    const std::vector<float> xs = in.to_vector<float>(), ys = out[0].to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      float s = xs[i] * 1.0f;
      for (int c = 1; c < 40; ++c) s = s + xs[i] * static_cast<float>(1 + c);
      const bool same = s == ys[i] || (s != s && ys[i] != ys[i]);
      ASSERT_TRUE(same) << isa << " element " << i << ": " << ys[i] << " vs " << s;
    }
  }
}

// Ten masks live at once: AVX-512 has seven k registers to write with; the fast path spills
// masks too (kmovw to the stack), and AVX2 and SSE2 masks are vectors. Right on every ISA.
TEST(JitAssembler, TooManyMasksAreSpilled) {
  LoopKernel k = LoopKernel::uniform(kFloat32, 1);
  const int32_t x = k.load(0);
  std::vector<int32_t> m;
  for (int c = 0; c < 10; ++c) m.push_back(k.binary(ExprOp::Lt, x, k.constant(c - 5, kFloat32)));
  int32_t v = x;
  for (int c = 9; c >= 0; --c) v = k.select(m[c], k.binary(ExprOp::Add, v, x), v);
  k.stores = {v};
  asmjit::JitRuntime rt;
  for (const std::string& isa : supported_jit_isas()) {
    expect_assembler_renders(rt, k, isa);
    auto ck = compile_with(isa, 0, true, k);
    const std::vector<Tensor> out = launch(*ck, "c", 2, 100, {}, 1);
    const std::vector<float> xs = values(kFloat32, 200, 3).to_vector<float>(),
                             ys = out[0].to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      float e = xs[i];
      for (int c = 9; c >= 0; --c) e = xs[i] < static_cast<float>(c - 5) ? e + xs[i] : e;
      const bool same = e == ys[i] || (e != e && ys[i] != ys[i]);
      ASSERT_TRUE(same) << isa << " element " << i << ": " << ys[i] << " vs " << e;
    }
  }
}

// More operands than general registers (two per operand, plus the arguments and counters):
// pointers are spilled to the stack and reloaded; right on every ISA.
TEST(JitAssembler, TooManyOperandsAreSpilled) {
  LoopKernel k = LoopKernel::uniform(kFloat32, 12);
  int32_t sum = k.load(0);
  for (int j = 1; j < 12; ++j) sum = k.binary(ExprOp::Add, sum, k.load(j));
  k.stores = {sum};
  asmjit::JitRuntime rt;
  const KernelVariant var{host_jit_isa(), std::vector<InnerLayout>(13, InnerLayout::Contiguous)};
  const RenderedKernel r = render_cpu_kernel(rt, k, var, false, RenderPath::Assembler);
  EXPECT_TRUE(r.assembler);
  rt.release(r.fn);
  for (const std::string& isa : supported_jit_isas()) {
    auto ck = compile_with(isa, 0, true, k);
    const std::vector<Tensor> out = launch(*ck, std::string(12, 'c'), 2, 50, {}, 1);
    std::vector<std::vector<float>> xs;
    for (int j = 0; j < 12; ++j) xs.push_back(values(kFloat32, 100, 3 + 7 * j).to_vector<float>());
    const std::vector<float> ys = out[0].to_vector<float>();
    for (size_t i = 0; i < ys.size(); ++i) {
      float e = xs[0][i];
      for (int j = 1; j < 12; ++j) e = e + xs[static_cast<size_t>(j)][i];
      const bool same = e == ys[i] || (e != e && ys[i] != ys[i]);
      ASSERT_TRUE(same) << isa << " element " << i << ": " << ys[i] << " vs " << e;
    }
  }
}

// A fast-path render that gives up after recording (an injected fault, as when registers run
// out) falls back to the Compiler: counted, reported, right; the next render takes the fast
// path again (nothing of the abandoned render is left in the pooled workspace).
TEST(JitAssembler, AGivenUpRenderFallsBackToTheCompiler) {
  const LoopKernel k = math_kernel(kFloat32, {ExprOp::GeluTanh, ExprOp::Exp});
  asmjit::JitRuntime rt;
  const KernelVariant var{host_jit_isa(), std::vector<InnerLayout>(4, InnerLayout::Contiguous),
                          false, 3};
  inject_assembler_faults(1);
  EXPECT_THROW(render_cpu_kernel(rt, k, var, false, RenderPath::Assembler), std::exception);
  inject_assembler_faults(1);
  const RenderedKernel r = render_cpu_kernel(rt, k, var, true);
  EXPECT_FALSE(r.assembler);
  EXPECT_NE(r.fallback.find("injected"), std::string::npos) << r.fallback;
  EXPECT_FALSE(r.assembly.empty());
  rt.release(r.fn);
  const RenderedKernel again = render_cpu_kernel(rt, k, var, false);
  EXPECT_TRUE(again.assembler) << again.fallback;
  rt.release(again.fn);

  const std::string isa = supported_jit_isas().front();
  LoopKernel k2 = k;  // a new kernel (not in the target's cache)
  k2.exprs[2].value = 0.5;
  const int64_t fallbacks = cpu_jit_counters().assembler_fallbacks.load();
  inject_assembler_faults(1);
  auto given_up = compile_with(isa, 0, true, k2);
  EXPECT_EQ(cpu_jit_counters().assembler_fallbacks.load(), fallbacks + 1);
  auto reference = compile_with(isa, 0, false, k2);
  for (int64_t n : {int64_t{5}, int64_t{300}}) {
    const std::vector<Tensor> a = launch(*given_up, "cc", 2, n, {}, 1);
    const std::vector<Tensor> b = launch(*reference, "cc", 2, n, {}, 1);
    for (size_t o = 0; o < a.size(); ++o)
      EXPECT_TRUE(std::equal(static_cast<const char*>(a[o].raw_data()),
                             static_cast<const char*>(a[o].raw_data()) + a[o].numel() * 4,
                             static_cast<const char*>(b[o].raw_data())));
  }
}

// The kernels of a training step's loss and normalization (cross_entropy forward and backward,
// whose row losses and mean are Float64, layer_norm forward and backward, log_softmax) render
// on the fast path on every ISA: with 16 vector registers (AVX2, SSE2) they spill, and a spill
// choice that kept choosing the reload registers of its last round once gave up on four of
// xent's kernels (the Compiler took 17 ms for one).
TEST(JitAssembler, TrainingStepKernelsTakeTheFastPath) {
  jit::CpuJitCounters& c = cpu_jit_counters();
  double scale = 1.0;
  for (const std::string& isa : supported_jit_isas()) {
    ConfigOverride<std::string> o(config().jit_isa, isa);
    tracer::wait_for_compiles();
    tracer::RegionCache::instance().clear();
    const int64_t kernels = c.kernels.load(), fallbacks = c.assembler_fallbacks.load();
    {
      testing::JitMode jit(true);
      scale += 0.0078125;  // constants of this ISA's own: kernels no earlier render cached
      const Tensor logits = randn({64, 1000}).requires_grad_(true);
      const Tensor target = arange(64, TensorOptions().dtype(kInt64)) * 7;
      Tensor loss = cross_entropy(logits * scale, target);
      const Tensor x = randn({32, 512}).requires_grad_(true);
      const Tensor w = ones({512}).requires_grad_(true), b = zeros({512});
      loss = loss + (layer_norm(x, {512}, w * scale, b) * log_softmax(x * scale, 1)).sum();
      loss.backward();
      kiln::sync();
    }
    tracer::wait_for_compiles();
    EXPECT_GE(c.kernels.load(), kernels + 4) << isa << ": the step compiled too few kernels";
    EXPECT_EQ(c.assembler_fallbacks.load(), fallbacks) << isa;
  }
}

// Kernels that draw (dropout, `rand(...) < p` masks) unroll by 2 and take the fast path on every
// ISA. On AVX-512 the pipelined loop refused their copies (each later copy offsets the index it
// draws for), and until 2026-12-01 every such kernel went to the Compiler: a dropout's render
// took 0.6-0.9 ms instead of ~0.1, and the Compiler wove the copies wrong (docs/jit.md).
TEST(JitAssembler, DrawingKernelsTakeTheFastPath) {
  jit::CpuJitCounters& c = cpu_jit_counters();
  double p = 0.25;
  for (const std::string& isa : supported_jit_isas()) {
    ConfigOverride<std::string> o(config().jit_isa, isa);
    tracer::wait_for_compiles();
    tracer::RegionCache::instance().clear();
    const int64_t kernels = c.kernels.load(), fallbacks = c.assembler_fallbacks.load();
    p += 0.0078125;  // constants of this ISA's own: kernels no earlier render cached
    {
      testing::JitMode jit(true);
      manual_seed(3);
      const Tensor x = randn({4096});
      const Tensor y = (dropout(x * 2.0, p, true) + (rand({4096}) < p).to(kFloat32)).sum();
      (void)y.item<float>();
    }
    tracer::wait_for_compiles();
    EXPECT_GE(c.kernels.load(), kernels + 1) << isa << ": nothing compiled";
    EXPECT_EQ(c.assembler_fallbacks.load(), fallbacks) << isa;
  }
}

// Kernels whose body calls out (sin and cos: the exact reduction of huge lanes, through
// call_block) or loops (integer pow over the exponent's bits) take the fast path too, on every
// ISA; the call is in the code.
TEST(JitAssembler, CallsAndLoopsTakeTheFastPath) {
  asmjit::JitRuntime rt;
  LoopKernel ip = LoopKernel::uniform(kInt32, 2);
  ip.stores = {ip.binary(ExprOp::Pow, ip.load(0), ip.load(1))};
  const std::vector<std::pair<std::string, LoopKernel>> kernels = {
      {"sin f32", math_kernel(kFloat32, {ExprOp::Sin})},
      {"cos f64", math_kernel(kFloat64, {ExprOp::Cos})},
      {"int pow", ip}};
  for (const auto& [name, k] : kernels)
    for (const std::string& isa : supported_jit_isas()) {
      const JitIsa ji = isa == "avx512" ? JitIsa::Avx512
                        : isa == "avx2" ? JitIsa::Avx2
                                        : JitIsa::Sse2;
      const KernelVariant v{ji, std::vector<InnerLayout>(3, InnerLayout::Contiguous)};
      const RenderedKernel r = render_cpu_kernel(rt, k, v, true, RenderPath::Assembler);
      EXPECT_TRUE(r.assembler) << name << ", " << isa;
      EXPECT_EQ(r.assembly.find("call") != std::string::npos, name != "int pow")
          << name << ", " << isa;
      rt.release(r.fn);
    }
}

}  // namespace
}  // namespace kiln::jit
