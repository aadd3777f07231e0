// Row kernels (reductions in the loop IR, docs/jit.md "Reductions"): the loop IR's text and
// checks, hand-built row kernels launched directly against the eager reductions bitwise (every
// op, both float dtypes, every ISA path, row lengths around every boundary of eager's order:
// lanes, pairwise blocks, 65536-element chunks; empty rows, NaN, signed zeros, broadcast
// operands, several threads), and plans through the recorder: layer norm and softmax written from
// primitives become one kernel each, bitwise equal to eager.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/render_reduce.h"
#include "jit/loop/row_pass_order.h"
#include "jit/loop/row_program.h"
#include "jit/plan/jit_plan.h"
#include "jit/plan/planner.h"
#include "jit/target.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "record_util.h"
#include "runtime/allocator.h"
#include "runtime/parallel.h"
#include "suite_passes.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

using jit::ExprOp;
using jit::LoopKernel;
using testing::ConfigOverride;
using testing::expect_bitwise_equal;
using testing::expect_error;
using testing::JitMode;
using testing::JitRestore;

TEST(JitReduceIr, TextOfALayerNormKernel) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  // One statement per expression: the order of a call's arguments is unspecified.
  const int32_t x = k.load(0);
  const int32_t s1 = k.reduce(ExprOp::ReduceSum, x);
  const int32_t m = k.binary(ExprOp::Div, s1, k.row_size(kFloat32));
  const int32_t d = k.binary(ExprOp::Sub, x, m);
  const int32_t s2 = k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, d, d));
  const int32_t v = k.binary(ExprOp::Div, s2, k.row_size(kFloat32, -1));
  const int32_t sd = k.unary(ExprOp::Sqrt, v);
  k.stores = {m, k.binary(ExprOp::Div, d, sd)};
  k.verify();
  EXPECT_EQ(jit::to_text(k),
            "kernel inputs=[Float32] params=[]\n"
            "  %0 = Load in0 : Float32\n"
            "  %1 = ReduceSum %0 : Float32\n"
            "  %2 = RowSize : Float32\n"
            "  %3 = Div %1 %2 : Float32\n"
            "  %4 = Sub %0 %3 : Float32\n"
            "  %5 = Mul %4 %4 : Float32\n"
            "  %6 = ReduceSum %5 : Float32\n"
            "  %7 = RowSize -1 : Float32\n"
            "  %8 = Div %6 %7 : Float32\n"
            "  %9 = Sqrt %8 : Float32\n"
            "  %10 = Div %4 %9 : Float32\n"
            "  out0 = %3\n"
            "  out1 = %10\n");
  const std::vector<uint8_t> row = k.row_values();
  EXPECT_EQ(row, (std::vector<uint8_t>{0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0}));
  EXPECT_TRUE(k.has_reduce());
  // The offset is part of the encoding: RowSize and RowSize -1 are different kernels.
  LoopKernel k2 = k;
  k2.exprs[7].ivalue = 0;
  EXPECT_NE(jit::encode(k), jit::encode(k2));
}

// Integer reductions (wrapping, exact in any order) are valid IR; the CUDA target renders them.
// Reductions of masks and integer RowSizes are not.
TEST(JitReduceIr, VerifyRejectsMaskReductionsAndIntegerRowSizes) {
  LoopKernel i = LoopKernel::uniform(DType::Int32, 1);
  i.stores = {i.reduce(ExprOp::ReduceSum, i.load(0))};
  EXPECT_NO_THROW(i.verify());
  LoopKernel k = LoopKernel::uniform(DType::Bool, 1);
  k.stores = {k.reduce(ExprOp::ReduceMax, k.load(0))};
  EXPECT_THROW(k.verify(), Error);
  LoopKernel r = LoopKernel::uniform(DType::Float32, 1);
  r.stores = {r.row_size(DType::Int64)};
  EXPECT_THROW(r.verify(), Error);
}

// The eager reduction of `op` over the last dim (keepdim).
Tensor eager_reduce(ExprOp op, const Tensor& x) {
  switch (op) {
    case ExprOp::ReduceSum:
      return x.sum({-1}, true);
    case ExprOp::ReduceProd:
      return x.prod({-1}, true);
    case ExprOp::ReduceMax:
      return x.amax({-1}, true);
    default:
      return x.amin({-1}, true);
  }
}

// Launches row kernel `k` over the index space [rows, n] with input 0 = x (contiguous rows) and
// input 1 = c ([rows, 1]: broadcast along the row); outputs as `row_out` says (a [rows, 1] row
// value, else [rows, n]).
std::vector<Tensor> launch(jit::CompiledKernel& kernel, const Tensor& x, const Tensor& c,
                           const std::vector<bool>& row_out) {
  const int64_t rows = x.sizes()[0], n = x.sizes()[1];
  const int64_t es = static_cast<int64_t>(itemsize(x.dtype()));
  jit::LaunchArgs la;
  la.sizes = {rows, n};
  la.reduced_dims = 1;
  std::vector<Tensor> outs;
  for (bool r : row_out) {
    Tensor o = r ? empty({rows, 1}, TensorOptions().dtype(x.dtype()))
                 : empty({rows, n}, TensorOptions().dtype(x.dtype()));
    la.ptrs.push_back(static_cast<char*>(const_cast<void*>(o.raw_data())));
    la.strides.push_back(r ? DimVector{es, 0} : DimVector{n * es, es});
    outs.push_back(o);
  }
  la.ptrs.push_back(static_cast<char*>(const_cast<void*>(x.raw_data())));
  la.strides.push_back({x.strides()[0] * es, x.strides()[1] * es});
  la.ptrs.push_back(static_cast<char*>(const_cast<void*>(c.raw_data())));
  la.strides.push_back({es, 0});
  kernel.launch(la);
  return outs;
}

// Values with the specials the order shows: signed zeros (which of equal extremes wins), a NaN
// now and then, and sums whose rounding depends on the order.
Tensor row_data(int64_t rows, int64_t n, DType dt, ExprOp op, uint64_t seed, bool nan) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> v(static_cast<size_t>(rows * n));
  for (auto& e : v) {
    e = op == ExprOp::ReduceProd ? 1.0 + 0.01 * g(rng) : g(rng) * 1e3;
    if (op == ExprOp::ReduceMax || op == ExprOp::ReduceMin) {
      const auto u = rng() % 4;
      if (u == 0) e = 0.0;
      if (u == 1) e = -0.0;
      if (u == 2) e = op == ExprOp::ReduceMax ? -std::fabs(e) : std::fabs(e);
    }
  }
  if (nan && !v.empty()) v[rng() % v.size()] = std::numeric_limits<double>::quiet_NaN();
  Tensor t = from_vector<double>(v, {rows, n});
  return t.to(dt);
}

TEST(JitReduceKernels, EveryOpDtypeIsaAndRowLengthMatchesEagerBitwise) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  const std::vector<int64_t> lengths = {0,   1,   2,   3,   4,   7,    8,    9,    15,    16,
                                        17,  31,  32,  33,  63,  64,   65,   127,  128,   129,
                                        136, 255, 256, 257, 300, 1000, 1024, 4099, 65536, 65543};
  const ExprOp ops[] = {ExprOp::ReduceSum, ExprOp::ReduceProd, ExprOp::ReduceMax,
                        ExprOp::ReduceMin};
  uint64_t seed = 1;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (ExprOp op : ops) {
        // out0 = reduce(x); out1 = reduce((x - c) * (x - c)) (a prologue reading a broadcast
        // operand); out2 = x - out0 (an epilogue reading the row value).
        LoopKernel k = LoopKernel::uniform(dt, 2);
        const int32_t x = k.load(0), c = k.load(1);
        const int32_t r = k.reduce(op, x);
        const int32_t d = k.binary(ExprOp::Sub, x, c);
        k.stores = {r, k.reduce(op, k.binary(ExprOp::Mul, d, d)), k.binary(ExprOp::Sub, x, r)};
        std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
        for (int64_t n : lengths) {
          if (n == 0 && (op == ExprOp::ReduceMax || op == ExprOp::ReduceMin)) continue;
          const int64_t rows = n >= 4096 ? 2 : 5;
          for (bool nan : {false, true}) {
            const Tensor xt = row_data(rows, n, dt, op, seed++, nan);
            const Tensor ct = (row_data(rows, 1, dt, ExprOp::ReduceSum, seed++, false) * 1e-3);
            std::vector<Tensor> got = launch(*kernel, xt, ct, {true, true, false});
            const std::string what =
                fmt::format("{} {} {} n={} nan={}", isa, dtype_name(dt), expr_op_name(op), n, nan);
            const Tensor want0 = eager_reduce(op, xt);
            expect_bitwise_equal(got[0], want0, what.c_str());
            expect_bitwise_equal(got[1], eager_reduce(op, (xt - ct) * (xt - ct)), what.c_str());
            expect_bitwise_equal(got[2], xt - want0, what.c_str());
          }
        }
      }
    }
  }
}

// Which of two equal extremes wins: rows whose max (min) is a zero, +0 and -0 scattered among
// negative (positive) values, so the sign of the result shows the order in which the row's
// lanes were folded ("the later of two equal values": eager's lanes in order; the JIT folds
// its accumulator's lanes as a tree in registers, row_passes.cpp, which must agree). Every ISA,
// both float dtypes, lengths around the accumulator's lanes.
TEST(JitReduceKernels, ExtremesOfSignedZerosFoldTheirLanesAsEager) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  uint64_t seed = 7;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (ExprOp op : {ExprOp::ReduceMax, ExprOp::ReduceMin}) {
        LoopKernel k = LoopKernel::uniform(dt, 2);
        k.stores = {k.reduce(op, k.load(0))};
        std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
        for (int64_t n : {4, 8, 9, 16, 17, 24, 32, 40, 64, 72}) {
          const int64_t rows = 64;
          std::mt19937_64 rng(seed++);
          std::vector<double> v(static_cast<size_t>(rows * n));
          for (double& e : v) {
            const auto u = rng() % 3;
            e = u == 0 ? 0.0 : u == 1 ? -0.0 : (op == ExprOp::ReduceMax ? -1.0 : 1.0);
          }
          const Tensor xt = from_vector<double>(v, {rows, n}).to(dt);
          const Tensor ct = zeros({rows, 1}, TensorOptions().dtype(dt));
          const std::vector<Tensor> got = launch(*kernel, xt, ct, {true});
          expect_bitwise_equal(
              got[0], eager_reduce(op, xt),
              fmt::format("{} {} {} n={}", isa, dtype_name(dt), expr_op_name(op), n).c_str());
        }
      }
    }
  }
}

// Row loads (loop_kernel.h): a float input constant along the row, read once per row, is a row
// value; row values computed from it are hoisted with the others. `q = sum(x) / c`, then
// `sum((x - q) * c)` (read in a later pass) and `(x - q) / c` (the element pass): every ISA,
// both dtypes, lengths around the lanes, the unroll and a long row's chunks; a kernel of row
// stores only (long rows split across two threads) too. The IR: its text, its row flag, its
// own encoding, and verify() takes row loads of floats in row kernels only.
TEST(JitReduceKernels, RowLoadsAreRowValuesBitwise) {
  LoopKernel ir = LoopKernel::uniform(DType::Float32, 2);
  const int32_t lx = ir.load(0), lc = ir.load_row(1);
  ir.stores = {ir.binary(ExprOp::Div, ir.reduce(ExprOp::ReduceSum, lx), lc)};
  EXPECT_NO_THROW(ir.verify());
  EXPECT_EQ(jit::to_text(ir),
            "kernel inputs=[Float32 Float32] params=[]\n"
            "  %0 = Load in0 : Float32\n"
            "  %1 = Load in1 row : Float32\n"
            "  %2 = ReduceSum %0 : Float32\n"
            "  %3 = Div %2 %1 : Float32\n"
            "  out0 = %3\n");
  EXPECT_EQ(ir.row_values(), (std::vector<uint8_t>{0, 1, 1, 1}));
  LoopKernel plain = ir;
  plain.exprs[1].ivalue = 0;
  EXPECT_NE(jit::encode(ir), jit::encode(plain));
  LoopKernel no_reduce = LoopKernel::uniform(DType::Float32, 1);
  no_reduce.stores = {no_reduce.load_row(0)};
  EXPECT_THROW(no_reduce.verify(), Error);
  LoopKernel ints = LoopKernel::uniform(DType::Int32, 2);
  ints.stores = {
      ints.reduce(ExprOp::ReduceSum, ints.binary(ExprOp::Mul, ints.load(0), ints.load_row(1)))};
  EXPECT_THROW(ints.verify(), Error);

  const std::vector<int64_t> lengths = {1, 2, 7, 8, 9, 16, 17, 33, 64, 65, 129, 1000, 65543};
  uint64_t seed = 700;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (bool elements : {true, false}) {
        LoopKernel k = LoopKernel::uniform(dt, 2);
        const int32_t x = k.load(0), c = k.load_row(1);
        const int32_t q = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), c);
        const int32_t e = k.binary(ExprOp::Sub, x, q);
        const int32_t r = k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, e, c));
        k.stores = {q, r};
        if (elements) k.stores.push_back(k.binary(ExprOp::Div, e, c));
        std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
        for (int64_t n : lengths) {
          ConfigOverride<int> threads(config().num_threads, n > 4096 ? 2 : 1);
          const int64_t rows = n >= 4096 ? 2 : 5;
          const Tensor xt = row_data(rows, n, dt, ExprOp::ReduceSum, seed++, false);
          const Tensor ct = row_data(rows, 1, dt, ExprOp::ReduceSum, seed++, false) * 1e-3;
          std::vector<Tensor> got = elements ? launch(*kernel, xt, ct, {true, true, false})
                                             : launch(*kernel, xt, ct, {true, true});
          const std::string what =
              fmt::format("{} {} n={} elements={}", isa, dtype_name(dt), n, elements);
          JitMode off(false);
          const Tensor wq = xt.sum({-1}, true) / ct;
          const Tensor we = xt - wq;
          expect_bitwise_equal(got[0], wq, what.c_str());
          expect_bitwise_equal(got[1], (we * ct).sum({-1}, true), what.c_str());
          if (elements) expect_bitwise_equal(got[2], we / ct, what.c_str());
        }
      }
    }
  }
}

// A softmax row's expressions without stores: x, its row max, e = exp(x - max), sum(e).
struct SoftmaxRow {
  LoopKernel k;
  int32_t x = -1, e = -1, s = -1;
};
SoftmaxRow softmax_row(DType dt) {
  SoftmaxRow r{LoopKernel::uniform(dt, 2)};
  r.x = r.k.load(0);
  const int32_t m = r.k.reduce(ExprOp::ReduceMax, r.x);
  r.e = r.k.unary(ExprOp::Exp, r.k.binary(ExprOp::Sub, r.x, m));
  r.s = r.k.reduce(ExprOp::ReduceSum, r.e);
  return r;
}

// A softmax row kernel: exp(x - max) is computed by the sum's pass and needed by the element
// pass; the CPU target keeps it in a scratch row between the two (render_reduce.h, row_stash)
// instead of computing it twice. Bitwise against eager, every ISA, lengths around the lanes.
TEST(JitReduceKernels, SoftmaxKernelKeepsItsExpsBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      auto [k, x, e, s] = softmax_row(dt);
      k.stores = {k.binary(ExprOp::Div, e, s), s};
      ASSERT_EQ(jit::row_stash(k), std::vector<int32_t>{e});
      std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
      for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 129, 1000, 1031}) {
        const Tensor xt = row_data(5, n, dt, ExprOp::ReduceSum, static_cast<uint64_t>(n), false);
        std::vector<Tensor> got = launch(*kernel, xt, zeros({5, 1}), {false, true});
        const Tensor ex = (xt - xt.amax({-1}, true)).exp();
        const Tensor sum = ex.sum({-1}, true);
        const std::string what = fmt::format("{} {} n={}", isa, dtype_name(dt), n);
        expect_bitwise_equal(got[0], ex / sum, what.c_str());
        expect_bitwise_equal(got[1], sum, what.c_str());
      }
    }
  }
}

// A kernel lowered with a cheap Reduce after the costly one (cross_entropy's forward and
// backward: the target logit's masked sum after the exps' sum) ends on the cheap pass, whose
// values row_stash does not keep, so the element pass computed the exps again.
// order_row_passes (jit/loop/row_pass_order.h) puts the cheap Reduce first: the exps are kept,
// and the results are the original kernel's bits on every ISA; a kernel already in that order
// is returned as it is.
TEST(JitReduceKernels, CheapReducesGoFirstSoTheExpsAreKeptBitwise) {
  for (DType dt : {kFloat32, kFloat64}) {
    auto [k, x, e, s] = softmax_row(dt);
    const int32_t picked =
        k.reduce(ExprOp::ReduceSum,
                 k.select(k.binary(ExprOp::Gt, x, k.constant(1.0, dt)), x, k.constant(0.0, dt)));
    k.stores = {k.binary(ExprOp::Div, e, s), picked};
    EXPECT_TRUE(jit::row_stash(k).empty()) << "the last pass is the cheap one";
    const LoopKernel ordered = jit::order_row_passes(k);
    ordered.verify();
    const std::vector<int32_t> kept = jit::row_stash(ordered);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(ordered.exprs[static_cast<size_t>(kept[0])].op, ExprOp::Exp);
    EXPECT_EQ(jit::order_row_passes(ordered), ordered);
    for (const std::string& isa : testing::supported_jit_isas()) {
      ConfigOverride<std::string> isa_override(config().jit_isa, isa);
      std::shared_ptr<jit::CompiledKernel> a = jit::cpu_target().compile(k);
      std::shared_ptr<jit::CompiledKernel> b = jit::cpu_target().compile(ordered);
      for (int64_t n : {1, 9, 17, 100, 1031}) {
        const Tensor xt = row_data(5, n, dt, ExprOp::ReduceSum, static_cast<uint64_t>(n), false);
        const std::string what = fmt::format("{} {} n={}", isa, dtype_name(dt), n);
        const std::vector<Tensor> want = launch(*a, xt, zeros({5, 1}), {false, true});
        const std::vector<Tensor> got = launch(*b, xt, zeros({5, 1}), {false, true});
        expect_bitwise_equal(got[0], want[0], what.c_str());
        expect_bitwise_equal(got[1], want[1], what.c_str());
      }
    }
  }
}

// Softmax rows pipelined on AVX-512 (render_reduce.h, row_pipelined): the element pass of row
// o rides along a pass of row o + 1, row o's values carried in registers, two scratch rows in
// turn. Bitwise against eager on every ISA (the others are not pipelined: the same test), both
// dtypes, 1 .. 65 rows per launch (one row: no pipeline; odd counts), row lengths with and
// without vector tails, a prologue reading a per-row broadcast operand (its next row's value is
// read by the pipelined passes), rows of -inf, a +inf, a NaN and signed zeros, and one and two
// threads (above the parallel grain each thread gets a share of the rows, odd ones included).
TEST(JitReduceKernels, PipelinedSoftmaxRowsBitwise) {
  auto data = [](int64_t rows, int64_t n, DType dt, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g;
    std::vector<double> v(static_cast<size_t>(rows * n));
    for (auto& e : v) e = 8.0 * g(rng);
    const double inf = std::numeric_limits<double>::infinity();
    auto at = [&](int64_t r, int64_t i) -> double& { return v[static_cast<size_t>(r * n + i)]; };
    for (int64_t r = 1; r < rows; r += 5) {
      for (int64_t i = 0; i < n; ++i) at(r, i) = -inf;  // all -inf: NaN
      if (r + 1 < rows) at(r + 1, n / 2) = inf;         // one +inf
      if (r + 2 < rows) at(r + 2, n - 1) = std::nan("");
      if (r + 3 < rows)
        for (int64_t i = 0; i < n; ++i) at(r + 3, i) = i < (n + 1) / 2 ? 0.0 : -0.0;
    }
    return from_vector<double>(v, {rows, n}).to(dt);
  };
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (bool reads : {false, true}) {
        // y = exp(x * c - max) / sum, the max and the sum stored too; `reads`: y times x * c, so
        // that the element bodies read the previous row's inputs (x, and c broadcast over it).
        LoopKernel k = LoopKernel::uniform(dt, 2);
        const int32_t xc = k.binary(ExprOp::Mul, k.load(0), k.load(1));
        const int32_t m = k.reduce(ExprOp::ReduceMax, xc);
        const int32_t e = k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, xc, m));
        const int32_t s = k.reduce(ExprOp::ReduceSum, e);
        const int32_t y = k.binary(ExprOp::Div, e, s);
        k.stores = {reads ? k.binary(ExprOp::Mul, y, xc) : y, m, s};
        EXPECT_TRUE(jit::row_pipelined(k, jit::JitIsa::Avx512));
        std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
        uint64_t seed = 500;
        for (int64_t n : {1, 15, 16, 17, 100, 129, 1000, 1031, 1152}) {
          for (int64_t rows : {1, 2, 3, 6, 65}) {
            for (int threads : {1, 2}) {
              if (threads == 2 && rows * n <= kParallelGrain) continue;
              ConfigOverride<int> t(config().num_threads, threads);
              const Tensor xt = data(rows, n, dt, seed++);
              Tensor ct = row_data(rows, 1, dt, ExprOp::ReduceSum, seed++, false) * 1e-3;
              ct = ct.abs() + 0.5;
              std::vector<Tensor> got = launch(*kernel, xt, ct, {false, true, true});
              const Tensor xs = xt * ct;
              const Tensor mx = xs.amax({-1}, true);
              const Tensor ex = (xs - mx).exp();
              const Tensor sum = ex.sum({-1}, true);
              const std::string what = fmt::format("{} {} n={} rows={} threads={} reads={}", isa,
                                                   dtype_name(dt), n, rows, threads, reads);
              expect_bitwise_equal(got[0], reads ? ex / sum * xs : ex / sum, what.c_str());
              expect_bitwise_equal(got[1], mx, what.c_str());
              expect_bitwise_equal(got[2], sum, what.c_str());
            }
          }
        }
      }
    }
  }
}

// Two passes over the same costly value (the first must compute it although only the last
// pass stashes it: a fuzzer find).
TEST(JitReduceKernels, TwoPassesOverAStashedValue) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    LoopKernel k = LoopKernel::uniform(kFloat32, 2);
    const int32_t e = k.unary(ExprOp::Exp, k.load(0));
    const int32_t mx = k.reduce(ExprOp::ReduceMax, e);
    const int32_t s = k.reduce(ExprOp::ReduceSum, e);
    k.stores = {mx, s, k.binary(ExprOp::Div, e, s)};
    std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
    for (int64_t n : {5, 16, 40, 300}) {
      const Tensor xt = row_data(3, n, kFloat32, ExprOp::ReduceSum, 77, false) * 1e-3;
      std::vector<Tensor> got = launch(*kernel, xt, zeros({3, 1}), {true, true, false});
      const Tensor ex = xt.exp();
      expect_bitwise_equal(got[0], ex.amax({-1}, true), isa.c_str());
      expect_bitwise_equal(got[1], ex.sum({-1}, true), isa.c_str());
      expect_bitwise_equal(got[2], ex / ex.sum({-1}, true), isa.c_str());
    }
  }
}

// Reduces of the same op, type and operand share one pass (layer norm from mean and var sums x
// twice; row_passes.cpp, earlier_twin); reduces that differ in op or operand keep their own.
TEST(JitReduceKernels, TwinReducesShareAPass) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      LoopKernel k = LoopKernel::uniform(dt, 2);
      const int32_t x = k.load(0), c = k.load(1);
      const int32_t d = k.binary(ExprOp::Sub, x, c);
      const int32_t s1 = k.reduce(ExprOp::ReduceSum, x);
      const int32_t mx = k.reduce(ExprOp::ReduceMax, x);
      const int32_t s2 = k.reduce(ExprOp::ReduceSum, x);   // s1's twin
      const int32_t sd = k.reduce(ExprOp::ReduceSum, d);   // another operand
      const int32_t mx2 = k.reduce(ExprOp::ReduceMax, x);  // mx's twin
      k.stores = {s1, mx, s2, sd, mx2, k.binary(ExprOp::Sub, x, k.binary(ExprOp::Add, s2, mx2))};
      std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
      for (int64_t n : {1, 17, 300}) {
        for (bool nan : {false, true}) {
          const Tensor xt =
              row_data(4, n, dt, ExprOp::ReduceMax, static_cast<uint64_t>(5 + n), nan);
          const Tensor ct = row_data(4, 1, dt, ExprOp::ReduceSum, 3, false);
          std::vector<Tensor> got = launch(*kernel, xt, ct, {true, true, true, true, true, false});
          const std::string what = fmt::format("{} {} n={} nan={}", isa, dtype_name(dt), n, nan);
          const Tensor sum = xt.sum({-1}, true), mxt = xt.amax({-1}, true);
          expect_bitwise_equal(got[0], sum, what.c_str());
          expect_bitwise_equal(got[1], mxt, what.c_str());
          expect_bitwise_equal(got[2], sum, what.c_str());
          expect_bitwise_equal(got[3], (xt - ct).sum({-1}, true), what.c_str());
          expect_bitwise_equal(got[4], mxt, what.c_str());
          expect_bitwise_equal(got[5], xt - (sum + mxt), what.c_str());
        }
      }
    }
  }
}

TEST(JitReduceKernels, ResultsDoNotDependOnTheThreadCount) {
  const Tensor x = row_data(64, 3000, kFloat32, ExprOp::ReduceSum, 7, false);
  const Tensor c = zeros({64, 1});
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
  k.stores = {k.reduce(ExprOp::ReduceSum, k.load(0))};
  std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
  std::vector<Tensor> one, two;
  {
    ConfigOverride<int> t(config().num_threads, 1);
    one = launch(*kernel, x, c, {true});
  }
  {
    ConfigOverride<int> t(config().num_threads, 2);
    two = launch(*kernel, x, c, {true});
  }
  expect_bitwise_equal(one[0], two[0]);
  expect_bitwise_equal(one[0], x.sum({-1}, true));
}

// A kernel of row values only is rendered once: compiling renders the layout its launches take
// (its row values broadcast along the row), not the all-contiguous one.
TEST(JitReduceKernels, RowValuesOnlyRenderOnce) {
  const Tensor x = row_data(8, 300, kFloat32, ExprOp::ReduceSum, 11, false);
  // With KILN_JIT=1 the data's own region may still be compiling in the background: its render
  // would count in the window below (seen once in a loaded ctest run).
  kiln::sync();
  tracer::wait_for_compiles();
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  // A constant of this test's own: rendered, not found in the kernel cache.
  k.stores = {k.reduce(ExprOp::ReduceSum,
                       k.binary(ExprOp::Mul, k.load(0), k.constant(1.0009765625, DType::Float32)))};
  const int64_t before = jit::cpu_jit_counters().kernels.load();
  std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
  EXPECT_EQ(jit::cpu_jit_counters().kernels.load() - before, 1);
  const Tensor out = empty({8, 1});
  jit::LaunchArgs la;
  la.sizes = {8, 300};
  la.reduced_dims = 1;
  la.ptrs = {static_cast<char*>(const_cast<void*>(out.raw_data())),
             static_cast<char*>(const_cast<void*>(x.raw_data()))};
  la.strides = {DimVector{4, 0}, DimVector{300 * 4, 4}};
  kernel->launch(la);
  EXPECT_EQ(jit::cpu_jit_counters().kernels.load() - before, 1) << "a second render at launch";
  expect_bitwise_equal(out, (x * 1.0009765625).sum({-1}, true));
}

TEST(JitReduceKernels, StridedRowsHaveNoMachineCode) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
  k.stores = {k.reduce(ExprOp::ReduceSum, k.load(0))};
  std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
  const Tensor x = row_data(8, 8, kFloat32, ExprOp::ReduceSum, 9, false).t();  // column rows
  EXPECT_THROW(launch(*kernel, x, zeros({8, 1}), {true}), Error);
}

// try_launch: the plan's one question and launch (CpuKernel computes the row split once for
// both). A strided row declines, having written nothing; a contiguous one launches.
TEST(JitReduceKernels, TryLaunchDeclinesWhatCanLaunchRejectsAndRunsNothing) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
  k.stores = {k.reduce(ExprOp::ReduceSum, k.load(0))};
  std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
  auto args = [](const Tensor& x, const Tensor& out, const Tensor& c) {
    const int64_t es = 4;
    jit::LaunchArgs la;
    la.sizes = {x.sizes()[0], x.sizes()[1]};
    la.reduced_dims = 1;
    la.ptrs = {static_cast<char*>(const_cast<void*>(out.raw_data())),
               static_cast<char*>(const_cast<void*>(x.raw_data())),
               static_cast<char*>(const_cast<void*>(c.raw_data()))};
    la.strides = {DimVector{es, 0}, DimVector{x.strides()[0] * es, x.strides()[1] * es},
                  DimVector{es, 0}};
    return la;
  };
  const Tensor c = zeros({8, 1});
  const Tensor columns = row_data(8, 8, kFloat32, ExprOp::ReduceSum, 9, false).t();
  Tensor out = full({8, 1}, 7.0);
  const jit::LaunchArgs strided = args(columns, out, c);
  EXPECT_FALSE(kernel->can_launch(strided));
  EXPECT_FALSE(kernel->try_launch(strided));
  expect_bitwise_equal(out, full({8, 1}, 7.0));  // untouched
  const Tensor rows = columns.contiguous();
  const jit::LaunchArgs whole = args(rows, out, c);
  EXPECT_TRUE(kernel->try_launch(whole));
  expect_bitwise_equal(out, rows.sum({-1}, true));
}

// ---- through the recorder ----

using JitReducePlanTest = testing::JitRecordedTest<>;

// Runs `program` eagerly and recorded (twice: the plan's first and a later run); the results
// must be bitwise equal. Returns the plan's step string ("k9": one kernel of 9 nodes; "e": eager).
std::string run_both(const std::function<TensorList()>& program, const std::string& what,
                     int* kernels = nullptr) {
  TensorList want;
  {
    JitMode off(false);
    want = program();
  }
  for (int it = 0; it < 2; ++it) {
    JitMode on(true);
    TensorList got = program();
    kiln::sync();
    testing::expect_lists_bitwise_equal(got, want, what);
  }
  std::vector<std::shared_ptr<tracer::RegionPlan>> keep;
  std::string s;
  int count = 0;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    keep.push_back(r->jit_plan());
    const auto* p = dynamic_cast<const jit::JitPlan*>(keep.back().get());
    if (p == nullptr) continue;
    count += p->num_kernels();
    for (const jit::Step& st : p->steps()) {
      if (!s.empty()) s += ' ';
      s += st.kernel ? fmt::format("k{}", st.kernel->nodes.size()) : std::string("e");
    }
  }
  if (kernels != nullptr) *kernels = count;
  return s;
}

// Calls f(plan, kernel step) for every kernel step of the cached regions' JIT plans.
template <class F>
void for_each_kernel_step(const F& f) {
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    const std::shared_ptr<tracer::RegionPlan> plan = r->jit_plan();
    const auto* p = dynamic_cast<const jit::JitPlan*>(plan.get());
    if (p == nullptr) continue;
    for (const jit::Step& st : p->steps())
      if (st.kernel) f(*p, *st.kernel);
  }
}

// The Reduce expressions of the cached regions' kernels.
int reduces_in_kernels() {
  int n = 0;
  for_each_kernel_step([&](const jit::JitPlan&, const jit::KernelStep& k) {
    for (const jit::Expr& e : k.kernel->source().exprs) n += jit::expr_is_reduce(e.op);
  });
  return n;
}

Tensor randn_of(std::vector<int64_t> shape, uint64_t seed, DType dt = kFloat32) {
  JitMode off(false);
  manual_seed(seed);
  return randn(IntList(shape), TensorOptions().dtype(dt));
}

// The CPU JIT's launch counters over one recorded, synced run of `program`; its results in `got`.
struct LaunchCounts {
  int64_t launches = 0, split_rows = 0, split_elements = 0, streamed = 0;
};
LaunchCounts counted_run(const std::function<TensorList()>& program, TensorList* got = nullptr) {
  const jit::CpuJitCounters& c = jit::cpu_jit_counters();
  auto now = [&] {
    return LaunchCounts{c.launches.load(), c.split_row_launches.load(),
                        c.split_element_launches.load(), c.streaming_launches.load()};
  };
  const LaunchCounts before = now();
  {
    JitMode on(true);
    TensorList results = program();
    kiln::sync();
    if (got != nullptr) *got = std::move(results);
  }
  const LaunchCounts after = now();
  return {after.launches - before.launches, after.split_rows - before.split_rows,
          after.split_elements - before.split_elements, after.streamed - before.streamed};
}

// A row value cast to Int32 and stored, beside the value itself and an element output reading
// it: a max over dim 1 of [5, 1, n] with keepdim, whose row values have the index space's
// shape, so the cast joins the reduction's kernel. Until 2026-11-30 the row renderer rejected
// Int32 row values: JitFuzz seed 13003446 (`amax` over dim 1 of [17, 1, 64], then `cast` to
// Int32 and `maximum`) warned "compiling a fused kernel of 3 ops failed" and planned the nodes
// as eager steps. Now the kernel renders (one kernel step); it is launched over columns, which
// the column renderer declines by design for integer row values, so its nodes run eagerly
// there, without a warning: eager's bits either way.
TEST_F(JitReducePlanTest, RowValuesCastToInt32RenderInTheReductionsKernel) {
  for (DType dt : {kFloat32, kFloat64})
    for (int64_t n : {1, 7, 8, 33, 1000}) {
      const Tensor x = randn_of({5, 1, n}, 50 + static_cast<uint64_t>(n), dt) * 100.0;
      const Tensor other = randn_of({5, 1, n}, 70 + static_cast<uint64_t>(n), dt) * 100.0;
      auto program = [&] {
        const Tensor m = x.amax({1}, true);
        return TensorList{m, m.to(kInt32), maximum(m, other)};
      };
      const std::string what = fmt::format("{} [5, 1, {}]", dt, n);
      tracer::RegionCache::instance().clear();
      EXPECT_EQ(run_both(program, what), "k3") << what << ": one kernel step";
    }
}

// A row kernel that declines a launch (CompiledKernel::try_launch: a row strided in this run)
// leaves its step to the eager kernels: [8, 64] rows taken with gaps and [16, 32] columns taken
// with gaps are both of the "other" contiguity class, so they share one region and its plan,
// compiled from the first; the second's rows are strided, which no row kernel renders. Its
// results are eager's bits with no launch, and the next run with whole rows launches again.
TEST_F(JitReducePlanTest, ADeclinedRowLaunchRunsTheStepEagerlyAndTheNextLaunches) {
  const Tensor base = randn_of({16, 64}, 41);
  const Tensor gapped_rows = base.slice(0, 0, 16, 2);
  const Tensor strided_rows = base.slice(1, 0, 64, 2);
  auto program_of = [](const Tensor& x) {
    return [x] { return TensorList{softmax(x * 2.0, -1), (x - 1.0).sum({-1})}; };
  };
  auto eager_of = [&](const Tensor& x) {
    JitMode off(false);
    return program_of(x)();
  };
  TensorList got;
  (void)counted_run(program_of(gapped_rows));  // recorded, interpreted, planned
  const LaunchCounts first = counted_run(program_of(gapped_rows), &got);
  EXPECT_GT(first.launches, 0) << "whole rows: the plan's row kernels run";
  testing::expect_lists_bitwise_equal(got, eager_of(gapped_rows), "rows with gaps");
  const size_t regions = tracer::RegionCache::instance().regions().size();

  const LaunchCounts declined = counted_run(program_of(strided_rows), &got);
  EXPECT_EQ(declined.launches, 0) << "strided rows: every row kernel declines";
  EXPECT_EQ(tracer::RegionCache::instance().regions().size(), regions) << "the same region";
  testing::expect_lists_bitwise_equal(got, eager_of(strided_rows), "strided rows");

  EXPECT_EQ(counted_run(program_of(gapped_rows), &got).launches, first.launches)
      << "a declined launch marks nothing broken";
  testing::expect_lists_bitwise_equal(got, eager_of(gapped_rows), "rows with gaps again");
}

// A reduction over fewer rows than kiln's threads, each row longer than one chunk (65536
// elements): eager spreads the chunks over the threads, and so does the kernel's launcher
// (run_row_chunks: the chunks' results in slots, then the same tree), bitwise equal to eager
// and to a one-thread launch. A kernel with element outputs computed from row values runs a row
// per thread (as eager); argmax (ReduceFirst, no program) runs eagerly there.
TEST_F(JitReducePlanTest, LongRowsSplitAcrossThreads) {
  const Tensor x = randn_of({2, 200003}, 31);
  const Tensor y = randn_of({2, 200003}, 32, kFloat64);
  struct Case {
    int threads;
    int64_t rows, n;
    bool splits;
  };
  // Lengths around whole chunks: one element into a second chunk, two and three whole chunks,
  // a short last chunk; rows of one chunk, or as many rows as threads, take a row per thread.
  for (const Case& c :
       {Case{2, 1, 65537, true}, Case{2, 1, 131072, true}, Case{3, 1, 200003, true},
        Case{3, 2, 196608, true}, Case{4, 1, 200003, true}, Case{1, 1, 70000, false},
        Case{2, 1, 60000, false}, Case{2, 2, 70000, false}}) {
    ConfigOverride<int> t(config().num_threads, c.threads);
    tracer::RegionCache::instance().clear();
    const Tensor xs = x.slice(0, 0, c.rows).slice(1, 0, c.n);
    const Tensor ys = y.slice(0, 0, c.rows).slice(1, 0, c.n);
    // Level 0 only (sums, extremes, a product, a mean's RowSize); level 1 (var reads the mean,
    // logsumexp's sum the max); Float64.
    const auto program = [&] {
      const Tensor u = xs * 2.0;
      return TensorList{u.sum({-1}),
                        u.amax({-1}),
                        (xs * 0.001 + 1.0).prod({-1}),
                        (u - 1.0).amin({-1}, true),
                        (u * u).mean({-1}),
                        xs.var({-1}),
                        (xs * 3.0).logsumexp({-1}),
                        (ys * ys).sum({-1})};
    };
    const std::string what = fmt::format("{} threads, {} rows of {}", c.threads, c.rows, c.n);
    run_both(program, what);
    TensorList got;
    const LaunchCounts n = counted_run(program, &got);
    EXPECT_GE(n.launches, 1) << what;
    EXPECT_EQ(n.split_rows > 0, c.splits) << what;
    if (c.splits) {  // the same bits on one thread (a row per call)
      ConfigOverride<int> one(config().num_threads, 1);
      JitMode on(true);
      const TensorList single = program();
      kiln::sync();
      testing::expect_lists_bitwise_equal(got, single, what + ", against one thread");
    }
  }
  {  // argmax: no program to split; its step runs eagerly with fewer rows than threads
    ConfigOverride<int> t(config().num_threads, 2);
    tracer::RegionCache::instance().clear();
    const Tensor xs = x.slice(0, 0, 1);
    const auto program = [&] { return TensorList{(xs * 2.0).argmax(-1)}; };
    run_both(program, "argmax of a long row");
    EXPECT_EQ(counted_run(program).launches, 0);
  }
  {  // element outputs (softmax): a row per thread, no split
    ConfigOverride<int> t(config().num_threads, 2);
    tracer::RegionCache::instance().clear();
    const Tensor xs = x.slice(0, 0, 1);
    const auto program = [&] { return TensorList{(xs * 2.0).softmax(-1)}; };
    run_both(program, "softmax of a long row");
    EXPECT_EQ(counted_run(program).split_rows, 0);
    // ... also on 4 threads: eager's softmax runs a row per thread too
    ConfigOverride<int> four(config().num_threads, 4);
    EXPECT_EQ(counted_run(program).launches, 1);
  }
  // Element outputs computed without a row value (newton's step: the new x, and the largest
  // relative change): eager computes x by pointwise ops across all its threads, and the kernel
  // splits such long rows by chunks too: the Reduces' chunks first, then calls storing the
  // elements of runs of chunks (run_row_chunks). Bitwise eager's, and one thread's.
  const Tensor idx = [] {
    JitMode off(false);
    return arange(200003, TensorOptions().dtype(kInt64));
  }();
  for (const auto& [threads, rows] : {std::pair{2, 1}, std::pair{2, 2}, std::pair{3, 1},
                                      std::pair{5, 2}, std::pair{6, 2}, std::pair{16, 1}}) {
    ConfigOverride<int> t(config().num_threads, threads);
    const Tensor x0 = x.slice(0, 0, rows).abs() + 0.5;
    const Tensor a = y.slice(0, 0, rows).abs().to(kFloat32) + 1.0;
    // As a leaf, and as a fresh buffer dying at the kernel (an index_select: an eager step), whose
    // buffer the new x takes over: the Reduces must read it before the elements are stored
    // (storing the elements first fails this case: checked 2026-11-30).
    for (bool donated : {false, true}) {
      tracer::RegionCache::instance().clear();
      const auto program = [&] {
        const Tensor t = donated ? x0.index_select(1, idx) : x0;
        const Tensor next = (t + a / t) * 0.5;
        return TensorList{next, ((next - t).abs() / next).amax({-1})};
      };
      const std::string what = fmt::format("newton's step, {} rows, {} threads{}", rows, threads,
                                           donated ? ", in a dying buffer" : "");
      run_both(program, what);
      TensorList got;
      const LaunchCounts n = counted_run(program, &got);
      EXPECT_EQ(n.launches, 1) << what;
      const int splits = rows < threads ? 1 : 0;  // as many rows as threads: a row per thread
      EXPECT_EQ(n.split_rows, splits) << what;
      EXPECT_EQ(n.split_elements, splits) << what;
      ConfigOverride<int> one(config().num_threads, 1);
      JitMode on(true);
      const TensorList single = program();
      kiln::sync();
      testing::expect_lists_bitwise_equal(got, single, what + ", against one thread");
    }
  }
  {  // Element outputs of 8 MiB and more streamed (non-temporal stores) from each run's start:
     // a chunk boundary is a multiple of 64 bytes into the row.
    ConfigOverride<int> t(config().num_threads, 3);
    ConfigOverride<std::string> stores(config().jit_streaming, "on");
    tracer::RegionCache::instance().clear();
    const Tensor big = [] {
      JitMode off(false);
      manual_seed(33);
      return rand({1, (int64_t{1} << 21) + 16}) + 0.5;
    }();
    const auto program = [&] {
      const Tensor next = (big + 2.0 / big) * 0.5;
      return TensorList{next, ((next - big).abs() / next).amax({-1})};
    };
    run_both(program, "newton's step over 2^21 + 16 elements, streamed");
    const LaunchCounts n = counted_run(program);
    EXPECT_EQ(n.split_elements, 1);
    EXPECT_EQ(n.streamed, 1);
  }
  {  // exp(x) stored beside its sum: the element pass reads the value the sum's pass stashed, so
     // the elements cannot be stored by chunks (one row on 2 threads: a row per thread)
    ConfigOverride<int> t(config().num_threads, 2);
    tracer::RegionCache::instance().clear();
    const Tensor xs = x.slice(0, 0, 1) * 0.1;
    const auto program = [&] {
      const Tensor e = xs.exp();
      return TensorList{e, e.sum({-1})};
    };
    run_both(program, "exp(x) beside its sum");
    EXPECT_EQ(counted_run(program).split_elements, 0);
  }
  // With a row value beside such outputs that reads RowSize (a mean), the element pass would
  // take a chunk's length for the row's: a row per thread where its rows keep more than a third
  // of the threads busy, else the step declines and its nodes run eagerly, dropping each
  // temporary after its last reader (JitPlan::run_nodes_eagerly): the run holds what eager mode
  // holds, not every intermediate result at once.
  for (const auto& [threads, rows, launches] :
       {std::tuple{2, 2, true}, std::tuple{5, 2, true}, std::tuple{6, 2, false},
        std::tuple{2, 1, true}, std::tuple{3, 1, false}, std::tuple{16, 1, false}}) {
    ConfigOverride<int> t(config().num_threads, threads);
    tracer::RegionCache::instance().clear();
    const Tensor x0 = x.slice(0, 0, rows).abs() + 0.5;
    const Tensor a = y.slice(0, 0, rows).abs().to(kFloat32) + 1.0;
    const auto program = [&] {
      const Tensor next = (x0 + a / x0) * 0.5;
      return TensorList{next, ((next - x0).abs() / next).mean({-1})};
    };
    const std::string what =
        fmt::format("a mean beside the step, {} rows, {} threads", rows, threads);
    run_both(program, what);
    EXPECT_EQ(counted_run(program).launches, launches ? 1 : 0) << what;
    if (launches) continue;
    int64_t eager_peak = 0, jit_peak = 0;
    {
      JitMode off(false);
      CpuPeakScope peak;
      const TensorList got = program();
      eager_peak = peak.peak_bytes();
    }
    {
      JitMode on(true);
      CpuPeakScope peak;
      const TensorList got = program();
      kiln::sync();
      jit_peak = peak.peak_bytes();
    }
    EXPECT_LE(jit_peak, eager_peak) << what;
  }
}

// Found by the hop fuzzer once region bodies were planned: a max / min over a row whose length
// leaves a masked group of lanes (AVX-512 Float64, and Float64 kernels with Float32 values)
// noted NaNs in the masked-off lanes too, where the prologue had made NaN of the zeros they load
// (x / x: 0 / 0), so the whole row came out NaN. Every ISA runs it (the suite's ISA passes);
// lengths cover every tail of 8 and 16 lanes.
TEST_F(JitReducePlanTest, ExtremesIgnoreWhatThePrologueMakesOfMaskedLanes) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t n = 1; n <= 40; ++n) {
      tracer::RegionCache::instance().clear();
      const Tensor x = randn_of({3, n}, 500 + static_cast<uint64_t>(n), dt) + 5.0;  // no zeros
      const std::string what = fmt::format("{} n={}", dtype_name(dt), n);
      run_both(
          [&] {
            Tensor q = x / x * x;           // x itself, but NaN where a lane holds 0
            Tensor m = x.to(kFloat32) / x;  // a Float32 value in the kernel: 8 lanes of Float64
            return TensorList{x - q.amax(IntList{-1}, true), q.amin(IntList{-1}, true),
                              m.amax(IntList{-1}, true)};
          },
          what);
    }
  }
}

TEST_F(JitReducePlanTest, LayerNormFromPrimitivesIsOneKernel) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      tracer::RegionCache::instance().clear();
      const Tensor x = randn_of({37, 333}, 1, dt) * 3.0 + 1.0, w = randn_of({333}, 2, dt),
                   b = randn_of({333}, 3, dt);
      int kernels = 0;
      const std::string steps = run_both(
          [&] {
            Tensor mu = x.mean({-1}, true);
            Tensor var = x.var({-1}, false, true);
            return TensorList{(x - mu) / (var + 1e-5).sqrt() * w + b};
          },
          isa + " layernorm " + std::string(dtype_name(dt)), &kernels);
      EXPECT_EQ(kernels, 1) << isa << " " << steps;
      EXPECT_EQ(steps, "k8") << isa;
      // mean and var each sum the row as lowered; the kernel sums it once (merge_common_exprs):
      // two passes over each row, not three.
      EXPECT_EQ(reduces_in_kernels(), 2) << isa;
    }
  }
}

TEST_F(JitReducePlanTest, SoftmaxFromPrimitivesIsOneKernel) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      tracer::RegionCache::instance().clear();
      const Tensor x = randn_of({41, 1000}, 4, dt) * 4.0;
      int kernels = 0;
      const std::string steps = run_both(
          [&] {
            Tensor e = (x - x.amax({-1}, true)).exp();
            return TensorList{e / e.sum({-1}, true)};
          },
          isa + " softmax " + std::string(dtype_name(dt)), &kernels);
      EXPECT_EQ(kernels, 1) << isa << " " << steps;
      EXPECT_EQ(steps, "k5") << isa;
    }
  }
}

// A pointwise kernel of the row kernel's index space whose loads are ready before it (a mask
// computed from inputs alone) merges into the row kernel that a node reads it together with:
// `softmax(x) * (a > 0)` and a masked row sum are one kernel each (they were two: the mask's
// kernel took the product and computed x's chain again, or loaded softmax's stored result).
// Not when the mask draws random numbers (a row kernel draws none) or reads a transposed input
// (not row-friendly): there the product stays a kernel of its own.
TEST_F(JitReducePlanTest, APointwiseMaskOfInputsMergesIntoTheRowKernel) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    const Tensor x = randn_of({33, 300}, 21) * 4.0, a = randn_of({33, 300}, 22);
    const Tensor c = randn_of({300}, 23), at = randn_of({300, 33}, 24).t();
    int kernels = 0;
    tracer::RegionCache::instance().clear();
    std::string steps = run_both(
        [&] {
          Tensor e = (x - x.amax({-1}, true)).exp();
          return TensorList{e / e.sum({-1}, true) * (a > 0.0).to(kFloat32)};
        },
        isa + " masked softmax", &kernels);
    EXPECT_EQ(steps, "k8") << isa;
    tracer::RegionCache::instance().clear();
    steps =
        run_both([&] { return TensorList{((x * 2.0).masked_fill(a + c > 0.0, 0.0)).sum({-1})}; },
                 isa + " masked sum", &kernels);
    EXPECT_EQ(steps, "k5") << isa;
    tracer::RegionCache::instance().clear();
    steps = run_both(
        [&] {
          Tensor e = (x - x.amax({-1}, true)).exp();
          return TensorList{e / e.sum({-1}, true) * (at > 0.0).to(kFloat32)};
        },
        isa + " transposed mask", &kernels);
    EXPECT_EQ(kernels, 2) << isa << ": " << steps;
  }
}

// Row values without keepdim join their kernel too when what reads them has their shape
// (`sum * 0.5`), and a full reduction's 0-d result broadcasts back over its one row
// (`x - x.mean()`); a [N] result read against [N, D] (which would line N up with D) does not.
TEST_F(JitReducePlanTest, RowValuesWithoutKeepdim) {
  const Tensor x = randn_of({16, 16}, 41);
  int kernels = 0;
  std::string steps =
      run_both([&] { return TensorList{(x * x).sum({-1}) * 0.5 + 1.0}; }, "sum * 0.5", &kernels);
  EXPECT_EQ(steps, "k4");
  tracer::RegionCache::instance().clear();
  steps = run_both([&] { return TensorList{(x - x.mean()).abs()}; }, "x - mean", &kernels);
  EXPECT_EQ(steps, "k3");
  tracer::RegionCache::instance().clear();
  steps = run_both([&] { return TensorList{x * 2.0 + x.sum({-1})}; }, "[16] vs [16, 16]", &kernels);
  EXPECT_EQ(kernels, 2) << steps;  // (the sum's kernel and the broadcasting add's)
}

// A row value without keepdim times an input of one element per row, [N, 1] against the sum's
// [N, M] of x [N, M, K] (JitFuzz seed 26459355): broadcast against [N, M], c varies along N, but
// a row load reads it right-aligned to the index space [N, M, K], along M. Such an input is no
// row load (the product runs after the sum's kernel); with keepdim (c [N, 1, 1] against the sum's
// [N, M, 1]) or an input of one element, the row load lines up and the kernel stays one.
TEST_F(JitReducePlanTest, RowLoadsLineUpWithTheRowShape) {
  const Tensor x = randn_of({7, 6, 5}, 51), wide = randn_of({7, 2}, 52);
  const Tensor c = wide.narrow(1, 1, 1);  // [7, 1], strides [2, 1]: a column of a wider tensor
  const Tensor one = randn_of({1}, 53), per_row = randn_of({7, 1, 1}, 54);
  int kernels = 0;
  // (x + 1 makes the sum's step a row kernel: a lone sum is an eager step.)
  run_both([&] { return TensorList{x.sum({-1}) * c, x + 1.0}; }, "sum * c", &kernels);
  tracer::RegionCache::instance().clear();
  run_both([&] { return TensorList{x.sum({-1}) * one, x + 1.0}; }, "sum * one", &kernels);
  EXPECT_EQ(kernels, 1);
  tracer::RegionCache::instance().clear();
  run_both(
      [&] {
        return TensorList{x.sum({-1}, true) * per_row, x + 1.0};
      },
      "keepdim sum * per_row", &kernels);
  EXPECT_EQ(kernels, 1);
}

// A Bool op with a Bool scalar of a row value (`logical_not(x.var()) * true`) computes in Int32
// with an Int32 constant, which the loop IR counts as an element value (LoopKernel::row_values:
// integer pow(x, 0) lowers to a lone Int32 1): lowered in the row kernel, it was stored with the
// kernel's shape, not its own. Until 2026-12-01 the planner still took it for a row value, and
// the flush handed a [1, 2, 2] Bool result to the 0-d tensor (RecordFuzz seed 26037881, under
// load, when the background planner was done before the program's second run: docs/tracer.md).
// Now such a node stays out of the row kernel (the planner lowers it to check), with eager's
// bits and no codegen failure; a float scalar (`var > 1.0`) keeps it in.
TEST_F(JitReducePlanTest, BoolOpsWithANonFloatScalarOfRowValuesStayOutOfTheRowKernel) {
  const int64_t failures = jit::codegen_failures();
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 2, 2}, {4, 8}}) {
    const Tensor x = randn_of(shape, 43);
    const std::vector<int64_t> all = {}, last = {-1};
    for (const std::vector<int64_t>& dims : {all, last}) {
      const std::string what = fmt::format("{} over {}", shape_str(shape), shape_str(dims));
      tracer::RegionCache::instance().clear();
      run_both(
          [&] {
            const Tensor v = var(x, dims, true, false);
            Tensor b = logical_not(v);
            b.mul_(Scalar(true));
            return TensorList{b, logical_not(v) + Scalar(true), eq(logical_not(v), Scalar(true)),
                              v > 1.0};
          },
          what);
      int row_kernels = 0;
      for_each_kernel_step([&](const jit::JitPlan&, const jit::KernelStep& st) {
        row_kernels += st.reduced_dims > 0;
      });
      EXPECT_EQ(row_kernels, 1) << what << ": var and `v > 1.0` in one row kernel";
    }
  }
  EXPECT_EQ(jit::codegen_failures(), failures);
}

// Outputs of 8 MiB and more with vector-aligned rows take non-temporal stores in the element
// pass (as pointwise kernels do); unaligned rows take plain ones. Both bitwise.
TEST_F(JitReducePlanTest, LargeOutputsStreamBitwise) {
  for (int64_t d : {1024, 1000, 1152}) {
    tracer::RegionCache::instance().clear();
    const Tensor x = randn_of({2100, d}, 31);
    const std::string steps = run_both(
        [&] {
          Tensor e = (x - x.amax({-1}, true)).exp();
          return TensorList{e / e.sum({-1}, true)};
        },
        "large softmax " + std::to_string(d));
    EXPECT_EQ(steps, "k5");
  }
  // exp(x) / sum(exp(x)): pipelined on AVX-512 along its one pass, a sum, whose pieces start
  // 72 elements apart in rows of 1152, so the element bodies there take plain stores
  // (row_pieces_aligned); rows of 1024 stream.
  for (int64_t d : {1024, 1152}) {
    tracer::RegionCache::instance().clear();
    const Tensor x = randn_of({2100, d}, 34);
    const std::string steps = run_both(
        [&] {
          Tensor e = x.exp();
          return TensorList{e / e.sum({-1}, true)};
        },
        "large exp / sum " + std::to_string(d));
    EXPECT_EQ(steps, "k3");
  }
  // Layer norm (its first and last passes sums, whose pieces start 72 elements apart in rows of
  // 1152): rows of 1024 and 1152 (both aligned), bitwise.
  for (int64_t d : {1024, 1152}) {
    tracer::RegionCache::instance().clear();
    const Tensor x = randn_of({2100, d}, 32) * 2.0 + 0.5, w = randn_of({d}, 33);
    const std::string steps = run_both(
        [&] {
          Tensor mu = x.mean({-1}, true);
          Tensor var = x.var({-1}, false, true);
          return TensorList{(x - mu) / (var + 1e-5).sqrt() * w};
        },
        "large layer norm " + std::to_string(d));
    EXPECT_EQ(steps, "k7");
  }
}

TEST(JitReduceKernels, PiecesAlignedFollowsTheProgram) {
  EXPECT_TRUE(jit::row_pieces_aligned(jit::row_program(ExprOp::ReduceSum, kFloat32, 1024), 16));
  EXPECT_FALSE(jit::row_pieces_aligned(jit::row_program(ExprOp::ReduceSum, kFloat32, 1152), 16));
  EXPECT_TRUE(jit::row_pieces_aligned(jit::row_program(ExprOp::ReduceSum, kFloat32, 1152), 8));
  EXPECT_TRUE(jit::row_pieces_aligned(jit::row_program(ExprOp::ReduceMax, kFloat32, 1000), 16));
  // A long row: whole chunks by calls, then the last chunk's pieces (504 elements in, for 16).
  EXPECT_TRUE(jit::row_pieces_aligned(jit::row_program(ExprOp::ReduceSum, kFloat32, 131088), 16));
  EXPECT_FALSE(jit::row_pieces_aligned(jit::row_program(ExprOp::ReduceSum, kFloat32, 132072), 16));
}

// A long row's program calls one shared program per whole chunk (a few words per chunk: the
// pieces of 2^23 elements written out took 5 ms per launch), and still covers the row piece by
// piece in order; the chunk-split words pop and push one result per chunk.
TEST(JitReduceKernels, LongRowProgramsCallAWholeChunk) {
  for (ExprOp op : {ExprOp::ReduceSum, ExprOp::ReduceProd, ExprOp::ReduceMax}) {
    for (int64_t n : {int64_t{65537}, int64_t{131072}, int64_t{200003}, int64_t{1} << 23}) {
      const std::vector<int64_t> p = jit::row_program(op, kFloat64, n);
      int64_t covered = 0;
      jit::for_each_piece(p.data(), [&](int64_t len, int64_t vec) {
        EXPECT_LE(vec, len);
        covered += len;
      });
      EXPECT_EQ(covered, n) << n;
      const int64_t chunks = jit::row_chunks(n);
      EXPECT_LE(static_cast<int64_t>(p.size()), 4 * chunks + 800) << n;  // the last chunk inline
      EXPECT_LE(jit::program_depth(p), 40) << n;
      std::vector<uint64_t> slots(static_cast<size_t>(chunks));
      const std::vector<int64_t> part =
          jit::row_program_chunks(op, kFloat64, n, 1, chunks, slots.data());
      int64_t from_chunk_1 = 0;
      jit::for_each_piece(part.data(), [&](int64_t len, int64_t) { from_chunk_1 += len; });
      EXPECT_EQ(from_chunk_1, n - jit::kRowProgramChunk) << n;
      // The chunks' tree alone: no deeper than the row's program, one result per chunk.
      const std::vector<int64_t> tree = jit::row_program_partials(n, slots.data());
      EXPECT_LE(jit::program_depth(tree), jit::program_depth(p)) << n;
      int64_t pushes = 0;
      for (size_t i = 0; tree[i] != 0; i += tree[i] == 3 ? 2 : 1) pushes += tree[i] == 3;
      EXPECT_EQ(pushes, chunks) << n;
    }
  }
}

// Reductions whose results leave the kernel: without keepdim, over two dims, unbiased variance
// (NaN for one element), an epilogue output and the reduced values both stored; sizes around
// the vector widths, empty rows, and a second recording with other sizes through the same plan.
TEST_F(JitReducePlanTest, ReductionsKeepdimOrNotOverSeveralDimsAndSizes) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    tracer::RegionCache::instance().clear();
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
             {3, 4, 5}, {2, 3, 17}, {5, 1, 1}, {4, 0, 3}, {6, 7, 129}}) {
      const Tensor x = randn_of(shape, 11) * 2.0;
      const Tensor xd = randn_of(shape, 12, kFloat64);
      run_both(
          [&] {
            Tensor y = x * 0.5 + 1.0;
            Tensor s = y.sum({-1});
            Tensor m = y.mean({-2, -1}, true);
            Tensor v = (xd * xd).var({-1}, true, true);
            Tensor p = (x * 0.01 + 1.0).prod({-1}, true);
            TensorList out{s, y - m, v, xd - v, p};
            if (x.numel() > 0) {  // (the extremes of nothing are an error)
              out.push_back((x * x).amax({-1}));
              out.push_back(x.abs().amin({-2, -1}));
            }
            return out;
          },
          isa + " shape " + shape_str(IntList(shape)));
    }
  }
}

// logsumexp in a row kernel, as eager computes it (the row max, 0 where it is infinite; the
// pairwise sum of exp(x - shift); log + shift): bitwise on every ISA for both float dtypes and
// integer inputs (computed in Float32), rows of -inf, +inf, NaN and empty rows, keepdim or not;
// a log-softmax from it (`x - x.logsumexp(-1, true)`) is one kernel.
TEST_F(JitReducePlanTest, LogsumexpIsARowKernelBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (int64_t d : {0, 1, 7, 16, 129, 1000}) {
        tracer::RegionCache::instance().clear();
        Tensor x = randn_of({6, d}, static_cast<uint64_t>(d) + 50, dt) * 30.0;
        if (d > 0) {
          JitMode off(false);
          const double inf = std::numeric_limits<double>::infinity();
          x.select(0, 1).fill_(-inf);                 // all -inf: -inf
          x.select(0, 2).narrow(0, 0, 1).fill_(inf);  // a +inf: +inf
          x.select(0, 3).narrow(0, d - 1, 1).fill_(std::nan(""));
          x.select(0, 4).narrow(0, 0, 1).fill_(-inf);  // one -inf among finite values
        }
        int kernels = 0;
        const std::string what = fmt::format("{} {} d={}", isa, dtype_name(dt), d);
        std::string steps = run_both(
            [&] {
              return TensorList{(x * 0.5).logsumexp({-1}), x.logsumexp({-1}, true)};
            },
            what, &kernels);
        EXPECT_EQ(kernels, 1) << what << " " << steps;  // both read x: one kernel
        tracer::RegionCache::instance().clear();
        steps = run_both([&] { return TensorList{x - x.logsumexp({-1}, true)}; },
                         what + " log_softmax", &kernels);
        EXPECT_EQ(steps, "k2") << what;
      }
    }
    tracer::RegionCache::instance().clear();
    const Tensor i = (randn_of({5, 40}, 61) * 20.0).to(kInt64);
    const Tensor i32 = (randn_of({5, 40}, 62) * 20.0).to(kInt32);
    run_both(
        [&] {
          return TensorList{(i * 3).logsumexp({-1}), i32.logsumexp({-1}, true)};
        },
        isa + " integer logsumexp");
  }
}

// Rows for softmax: random values at scale 8, and where there are enough rows, a row of -inf
// (NaN out), one with a +inf, one with a NaN, one with a single -inf among finite values, one
// with signed zeros only.
Tensor softmax_rows_of(int64_t rows, int64_t n, DType dt, uint64_t seed) {
  Tensor x = randn_of({rows, n}, seed, dt) * 8.0;
  if (n == 0 || rows < 6) return x;
  JitMode off(false);
  const double inf = std::numeric_limits<double>::infinity();
  x.select(0, 1).fill_(-inf);
  x.select(0, 2).narrow(0, n / 2, 1).fill_(inf);
  x.select(0, 3).narrow(0, n - 1, 1).fill_(std::nan(""));
  x.select(0, 4).narrow(0, 0, 1).fill_(-inf);
  x.select(0, 5).fill_(-0.0);
  x.select(0, 5).narrow(0, 0, (n + 1) / 2).fill_(0.0);
  return x;
}

// Eager softmax over the last dim is the chain amax, exp(x - max), sum, e * (1 / sum), each
// eager op's bits (ops/reduce.h softmax_rows), and log_softmax x - (max + log(sum)) of the same
// max and sum: the contract that lets the JIT lower both into row kernels. Row lengths around
// the lanes, the pairwise blocks and the 65536-element chunks.
TEST_F(JitReducePlanTest, EagerSoftmaxIsItsReductionChainBitwise) {
  JitMode off(false);
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t n :
         {1, 7, 8, 9, 16, 17, 127, 128, 129, 136, 300, 512, 1000, 4099, 65536, 65543, 140001}) {
      const int64_t rows = n > 5000 ? 6 : 9;
      const Tensor x = softmax_rows_of(rows, n, dt, static_cast<uint64_t>(n) + 300);
      const Tensor e = (x - x.amax({-1}, true)).exp();
      const Tensor want = e * e.sum({-1}, true).reciprocal();
      expect_bitwise_equal(softmax(x, -1), want,
                           fmt::format("softmax {} n={}", dtype_name(dt), n).c_str());
      // log_softmax: x - (max + log(sum)) with the same max and sum.
      const Tensor mx = x.amax({-1}, true);
      expect_bitwise_equal(log_softmax(x, -1), x - (mx + (x - mx).exp().sum({-1}, true).log()),
                           fmt::format("log_softmax {} n={}", dtype_name(dt), n).c_str());
      // A 3-D input over its last dim is the same rows.
      expect_bitwise_equal(softmax(x.reshape({rows, 1, n}), 2), want.reshape({rows, 1, n}),
                           fmt::format("softmax 3-D {} n={}", dtype_name(dt), n).c_str());
    }
  }
}

// softmax and log_softmax over the last dim are row kernels (jit/lower/lower_reduce.h), fused
// with their prologue (attention's scale and causal mask) and epilogue: eager's bits on every
// ISA, both float dtypes, rows of -inf, +inf, NaN and signed zeros, row lengths around the
// order's boundaries; over another dim they stay eager steps, with eager's bits.
TEST_F(JitReducePlanTest, SoftmaxOpIsARowKernelBitwise) {
  for (bool log : {false, true}) {
    const auto op = [log](const Tensor& t, int64_t dim) {
      return log ? log_softmax(t, dim) : softmax(t, dim);
    };
    const std::string name = log ? "log_softmax" : "softmax";
    for (const std::string& isa : testing::supported_jit_isas()) {
      ConfigOverride<std::string> isa_override(config().jit_isa, isa);
      for (DType dt : {kFloat32, kFloat64}) {
        for (int64_t n : {0, 1, 7, 16, 17, 129, 512, 1000}) {
          const std::string what = fmt::format("{} {} {} n={}", name, isa, dtype_name(dt), n);
          const Tensor x = softmax_rows_of(8, n, dt, static_cast<uint64_t>(n) + 70);
          tracer::RegionCache::instance().clear();
          EXPECT_EQ(run_both([&] { return TensorList{op(x, -1)}; }, what), "k1") << what;
          Tensor mask;
          {
            JitMode off(false);
            mask = ones({8, n}, TensorOptions().dtype(kBool)).triu(1);
          }
          tracer::RegionCache::instance().clear();
          EXPECT_EQ(run_both(
                        [&] {
                          Tensor p = op((x * 0.125).masked_fill(mask, -INFINITY), -1);
                          return TensorList{p * 3.0};
                        },
                        what + " scaled, masked"),
                    "k4")
              << what;
        }
      }
    }
    // Three 65536-element chunks in a row (the tree of chunk results), once.
    tracer::RegionCache::instance().clear();
    const Tensor big = softmax_rows_of(2, 140001, kFloat32, 90);
    EXPECT_EQ(run_both([&] { return TensorList{op(big + 1.0, -1)}; }, name + " chunks"), "k2");
    // Over dim 0: column kernels (jit/passes/column_split.h; an eager step until 2026-11-30):
    // softmax's maxima and e, then the sums and e * (1 / s); log_softmax's maxima, the sums and
    // their log, m + log(s), x - that (JitColumnPlanTest.SoftmaxOverColumnsIsColumnKernels).
    tracer::RegionCache::instance().clear();
    const Tensor x = softmax_rows_of(9, 33, kFloat32, 91);
    EXPECT_EQ(run_both([&] { return TensorList{op(x + 1.0, 0)}; }, name + " dim 0"),
              log ? "k2 k5 k1 k2" : "k4 k3");
  }
}

// Values with ties (a few distinct integers), signed zeros, infinities and, where asked, NaNs
// at random places of some rows: what decides which index argmax / argmin return.
Tensor tie_data(int64_t rows, int64_t n, DType dt, uint64_t seed, bool nan) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(rows * n));
  const double inf = std::numeric_limits<double>::infinity();
  const double pick[] = {-3, -1, 0, -0.0, 1, 2, 2, 5, inf, -inf};
  for (auto& e : v) e = pick[rng() % (is_floating(dt) ? 10 : 8)];
  if (nan && is_floating(dt))
    for (int64_t r = 0; r < rows; r += 2) {
      v[static_cast<size_t>(r * n) + rng() % n] = std::numeric_limits<double>::quiet_NaN();
      v[static_cast<size_t>(r * n) + rng() % n] = std::numeric_limits<double>::quiet_NaN();
    }
  JitMode off(false);
  return from_vector<double>(v, {rows, n}).to(dt);
}

// argmax / argmin in row kernels (the first index of the extreme, the first NaN where there is
// one, ties and +0 / -0 as eager): Float32, Float64 and Int32, every ISA, rows around the lane
// counts, the vector tails and a 65536-element chunk, keepdim or not; one kernel with their
// prologue (`(x * w + b).argmax(-1)`); over another dim they stay eager steps.
TEST_F(JitReducePlanTest, ArgmaxArgminAreRowKernelsBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64, kInt32}) {
      for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 33, 100, 1000, 70001}) {
        for (bool nan : {false, true}) {
          tracer::RegionCache::instance().clear();
          const int64_t rows = n > 1000 ? 2 : 9;
          const Tensor x = tie_data(rows, n, dt, static_cast<uint64_t>(n) * 3 + nan, nan);
          const std::string what = fmt::format("{} {} n={} nan={}", isa, dtype_name(dt), n, nan);
          int kernels = 0;
          const std::string steps = run_both(
              [&] {
                return TensorList{x.argmax(-1), x.argmin(-1, true), (x * 2).argmax(1, true)};
              },
              what, &kernels);
          EXPECT_EQ(kernels, 1) << what << " " << steps;
        }
      }
    }
    // The extreme 0 after the first vector: lanes past the kernel's count must not count (SSE2
    // runs 2 lanes here, the Float32 flags in half registers whose upper lanes compare 0 == 0).
    for (int64_t n : {3, 4, 5, 9, 17}) {
      tracer::RegionCache::instance().clear();
      std::vector<double> v(static_cast<size_t>(4 * n), -1.0);
      for (int64_t r = 0; r < 4; ++r) v[static_cast<size_t>(r * n + n - 1 - r % 2)] = 0.0;
      Tensor z;
      {
        JitMode off(false);
        z = from_vector<double>(v, {4, n}).to(kFloat32);
      }
      run_both(
          [&] {
            return TensorList{z.argmax(-1), (-z).argmin(-1)};
          },
          fmt::format("{} late zero n={}", isa, n));
    }
    tracer::RegionCache::instance().clear();
    const Tensor x = randn_of({31, 45}, 71), w = randn_of({45}, 72), b = randn_of({45}, 73);
    EXPECT_EQ(run_both([&] { return TensorList{(x * w + b).argmax(-1)}; }, isa + " fused"), "k3");
    tracer::RegionCache::instance().clear();
    run_both(
        [&] {
          return TensorList{(x * w).argmax(0), (x + 1.0).argmin(0, true)};
        },
        isa + " over dim 0");
  }
}

// argmax of a value computed through a transcendental from a row kernel's row values
// (`softmax(x).argmax(-1)`): its two passes would each compute the exps again, so the softmax
// kernel stores its output and a kernel of its own takes the argmax (planner.cpp
// `costly_from_row_values`): two kernels, eager's bits. A prologue without one (`(x * w +
// b).argmax(-1)` above) and a max of the softmax (one pass) stay in the kernel.
TEST_F(JitReducePlanTest, ArgmaxOfASoftmaxIsAKernelOfItsOwnBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    const Tensor x = tie_data(9, 100, kFloat32, 74, true);
    tracer::RegionCache::instance().clear();
    int kernels = 0;
    EXPECT_EQ(
        run_both([&] { return TensorList{softmax(x, -1).argmax(-1)}; }, isa + " softmax", &kernels),
        "k1 k1");
    EXPECT_EQ(kernels, 2);
    tracer::RegionCache::instance().clear();
    EXPECT_EQ(run_both([&] { return TensorList{(x - x.amax({-1}, true)).exp().argmin(-1)}; },
                       isa + " exp"),
              "k3 k1");
    tracer::RegionCache::instance().clear();
    EXPECT_EQ(run_both([&] { return TensorList{softmax(x, -1).amax({-1})}; }, isa + " amax"), "k2");
  }
}

// all / any of every dtype in row kernels (x != 0, NaN and -0 as eager; empty inputs), with a
// fused comparison (`(x > 0.5).all()`: one kernel).
TEST_F(JitReducePlanTest, AllAnyAreRowKernelsBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64, kInt32, kInt64, kBool}) {
      for (int64_t n : {0, 1, 5, 16, 17, 100}) {
        for (int kind = 0; kind < 4; ++kind) {  // all nonzero, one zero, all zero, -0 and NaN
          tracer::RegionCache::instance().clear();
          Tensor x;
          {
            JitMode off(false);
            std::vector<double> v(static_cast<size_t>(3 * n), kind == 2 ? 0.0 : 2.0);
            if (kind == 1 && n > 0) v[v.size() / 2] = 0.0;
            if (kind == 3 && n > 0) {
              std::fill(v.begin(), v.end(), -0.0);
              if (is_floating(dt)) v.back() = std::numeric_limits<double>::quiet_NaN();
            }
            x = from_vector<double>(v, {3, n}).to(dt);
          }
          const std::string what = fmt::format("{} {} n={} kind={}", isa, dtype_name(dt), n, kind);
          int kernels = 0;
          run_both([&] { return TensorList{x.all(), x.any()}; }, what, &kernels);
          if (n > 0) {  // (an empty input's region is not planned)
            EXPECT_EQ(kernels, 1) << what;
          }
        }
      }
    }
    tracer::RegionCache::instance().clear();
    const Tensor x = randn_of({7, 40}, 81);
    EXPECT_EQ(run_both(
                  [&] {
                    return TensorList{(x > 0.5).all(), (x > -9.0).all()};
                  },
                  isa + " fused"),
              "k4");
  }
}

// What runs eagerly: a column sum of 13 columns (the column kernel declines the launch:
// eager's 16-column windows fold fewer than 16 faster), a reduction of a transposed input (its rows
// are not contiguous: the launch has no machine code and the nodes run eagerly), integer sums; and
// what now fuses (argmax, logsumexp). Results are still eager's.
TEST_F(JitReducePlanTest, WhatStaysEagerStillMatches) {
  const Tensor x = randn_of({9, 13}, 21);
  const Tensor i = (randn_of({9, 13}, 22) * 10.0).to(kInt64);
  const std::vector<std::function<Tensor()>> programs = {
      [&] { return (x * 2.0).sum({0}); },        [&] { return (x + 1.0).argmax(-1); },
      [&] { return (x * 2.0).t().sum({-1}); },   [&] { return (i * 3).sum({-1}); },
      [&] { return (x + 1.0).logsumexp({-1}); }, [&] { return x.t().sum({-1}) + 1.0; }};
  for (size_t p = 0; p < programs.size(); ++p) {
    tracer::RegionCache::instance().clear();
    try {
      run_both([&] { return TensorList{programs[p]()}; }, "eager reduction " + std::to_string(p));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "program " << p << " threw: " << e.what();
    }
  }
}

namespace {

// layer_norm's chain of eager ops (jit/passes/layer_norm_split.h): in `dt` (x's dtype since
// 2026-12-01, Float64 before), the mean, the mean of the squared deviations, 1 / sqrt(var +
// eps), ((x - mean) * rstd) * w + b, rounded to x's dtype.
Tensor layer_norm_chain(const Tensor& x, int64_t k, const Tensor& w, const Tensor& b, double eps,
                        DType dt) {
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  const Tensor xd = x.to(dt);
  const Tensor d = xd - xd.mean(IntList(dims), true);
  Tensor y = d * (1.0 / ((d * d).mean(IntList(dims), true) + eps).sqrt());
  if (w.defined()) y = y * w.to(dt);
  if (b.defined()) y = y + b.to(dt);
  return y.to(x.dtype());
}

}  // namespace

// Eager layer_norm is that chain bit for bit (ops/reduce.h layer_norm_rows): the contract that
// lets the JIT rewrite it. Both dtypes, with and without the affine parts, one and two
// normalized dims, rows around the pairwise blocks and the 65536-element chunks, eps. Float32
// is not the Float64 chain's rounding (the op before 2026-12-01): some rows tell them apart.
TEST_F(JitReducePlanTest, EagerLayerNormIsItsChainBitwise) {
  JitMode off(false);
  const Tensor xf = randn_of({64, 1000}, 799, kFloat32) * 3.0 + 1.0;
  EXPECT_FALSE(equal(layer_norm(xf, {1000}), layer_norm_chain(xf, 1, {}, {}, 1e-5, kFloat64)));
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t n : {1, 7, 8, 129, 1000, 65543}) {
      const int64_t rows = n > 5000 ? 2 : 5;
      const Tensor x = randn_of({rows, n}, static_cast<uint64_t>(n) + 800, dt) * 3.0 + 1.0;
      const Tensor w = randn_of({n}, 801, dt), b = randn_of({n}, 802, dt);
      for (int affine = 0; affine < 3; ++affine) {
        const Tensor ww = affine > 0 ? w : Tensor(), bb = affine > 1 ? b : Tensor();
        for (double eps : {1e-5, 0.25}) {
          expect_bitwise_equal(
              layer_norm(x, {n}, ww, bb, eps), layer_norm_chain(x, 1, ww, bb, eps, dt),
              fmt::format("{} n={} affine {} eps {}", dtype_name(dt), n, affine, eps).c_str());
        }
      }
    }
    const Tensor x3 = randn_of({4, 3, 50}, 803, dt);
    const Tensor w3 = randn_of({3, 50}, 804, dt);
    expect_bitwise_equal(layer_norm(x3, {3, 50}, w3, Tensor(), 1e-5),
                         layer_norm_chain(x3, 2, w3, Tensor(), 1e-5, dt), "two normalized dims");
  }
}

// The layer_norm op is rewritten into its chain (jit/passes/layer_norm_split.h) and fused into
// one row kernel with what computes its input and what reads its output: eager's bits on every
// ISA, both dtypes, affine or not, two normalized dims; its gradients too. A transposed input
// keeps the op an eager step (eager's bits all the same).
TEST_F(JitReducePlanTest, LayerNormOpIsARowKernelBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (int64_t n : {1, 17, 129, 1000}) {
        const std::string what = fmt::format("{} {} n={}", isa, dtype_name(dt), n);
        const Tensor x = randn_of({6, n}, static_cast<uint64_t>(n) + 810, dt);
        const Tensor r = randn_of({6, n}, 811, dt);
        const Tensor w = randn_of({n}, 812, dt), b = randn_of({n}, 813, dt);
        int kernels = 0;
        tracer::RegionCache::instance().clear();
        std::string steps = run_both(
            [&] {
              return TensorList{layer_norm(x, {n}, w, b), layer_norm(x * 2.0, {n})};
            },
            what, &kernels);
        EXPECT_EQ(kernels, 1) << what << ": " << steps;  // both read x's rows: one kernel
        EXPECT_EQ(steps.find('e'), std::string::npos) << what << ": " << steps;
        tracer::RegionCache::instance().clear();
        steps = run_both(
            [&] { return TensorList{gelu(layer_norm(x + r, {n}, w, Tensor()), "tanh") * 0.5}; },
            what + " residual, gelu", &kernels);
        EXPECT_EQ(kernels, 1) << what << ": " << steps;
        EXPECT_EQ(steps.find('e'), std::string::npos) << what << ": " << steps;
      }
      const Tensor x3 = randn_of({4, 3, 50}, 814, dt), w3 = randn_of({3, 50}, 815, dt);
      tracer::RegionCache::instance().clear();
      int kernels = 0;
      run_both(
          [&] {
            return TensorList{layer_norm(x3 - 1.0, {3, 50}, w3, w3)};
          },
          isa + " two dims", &kernels);
      EXPECT_EQ(kernels, 1) << isa;
      // Gradients through the rewritten forward.
      tracer::RegionCache::instance().clear();
      run_both(
          [&] {
            const Tensor xg = x3.detach().requires_grad_();
            const Tensor wg = w3.detach().requires_grad_();
            const Tensor y = layer_norm(xg * 1.5, {50}, wg.select(0, 0), Tensor());
            (y * y).sum().backward();
            return TensorList{y, xg.grad(), wg.grad()};
          },
          isa + " gradients");
    }
  }
  // Transposed: the rows are not contiguous; an eager step.
  tracer::RegionCache::instance().clear();
  const Tensor xt = randn_of({40, 6}, 816).t();
  EXPECT_EQ(run_both([&] { return TensorList{layer_norm(xt, {40}) * 2.0}; }, "transposed"), "e k1");
}

// Rows of class scores for cross_entropy, with targets: a few ignored (-100), the rest random
// classes. Where `special`, ignored rows hold -inf, +inf and NaN (their loss is masked to 0
// whatever their logsumexp is) and one counted row is all -0.
struct CrossEntropyCase {
  Tensor x, t;
};
CrossEntropyCase cross_entropy_case(int64_t rows, int64_t n, DType dt, uint64_t seed,
                                    bool special) {
  JitMode off(false);
  CrossEntropyCase c;
  c.x = randn_of({rows, n}, seed, dt) * 8.0;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> t(static_cast<size_t>(rows));
  for (auto& v : t) v = rng() % 5 == 0 ? -100 : static_cast<int64_t>(rng() % n);
  if (special && rows >= 5) {
    const double inf = std::numeric_limits<double>::infinity();
    c.x.select(0, 1).fill_(-inf);
    c.x.select(0, 2).narrow(0, n / 2, 1).fill_(inf);
    c.x.select(0, 3).narrow(0, n - 1, 1).fill_(std::nan(""));
    c.x.select(0, 4).fill_(-0.0);
    t[1] = t[2] = t[3] = -100;
    t[4] = n - 1;
  }
  c.t = from_vector<int64_t>(t, {rows});
  return c;
}

// Eager cross_entropy is the chain its JIT rewrite computes (jit/passes/cross_entropy_split.h):
// each row's max, exps' sum and logsumexp in the logits' dtype by the eager amax and sum, lse -
// x[t] in Float64, the ignored rows masked to 0, the sum of the losses over the counted rows.
// Bit for bit, around the lanes, the pairwise blocks and the 65536-element chunks, and for more
// rows than a chunk. Float32 logits also against the same chain in Float64 (the op's form before
// 2026-12-01) over single counted rows, which tell the two apart: the comparisons are not ones
// that a Float64 kernel would pass too.
TEST_F(JitReducePlanTest, EagerCrossEntropyIsItsChainBitwise) {
  JitMode off(false);
  auto chain = [](const CrossEntropyCase& c, DType row_dtype, DType dt) {
    const Tensor x = c.x.to(row_dtype);
    const Tensor mx = x.amax({-1}, true);
    const Tensor lse = (mx + (x - mx).exp().sum({-1}, true).log()).to(kFloat64);
    const Tensor ignored = eq(c.t, Scalar(int64_t{-100}));
    const Tensor picked =
        c.x.gather(1, where(ignored, zeros_like(c.t), c.t).unsqueeze(1)).to(kFloat64);
    const Tensor loss = (lse - picked).masked_fill(ignored.unsqueeze(1), 0.0);
    return (loss.sum() / ne(c.t, Scalar(int64_t{-100})).sum()).to(dt);
  };
  int told_apart = 0;
  for (DType dt : {kFloat32, kFloat64}) {
    for (const auto& [rows, n] : std::vector<std::pair<int64_t, int64_t>>{
             {9, 1}, {9, 7}, {9, 17}, {9, 129}, {9, 1000}, {3, 65543}, {70001, 3}}) {
      for (bool special : {false, true}) {
        const std::string what =
            fmt::format("{} rows={} n={} special={}", dtype_name(dt), rows, n, special);
        const CrossEntropyCase c = cross_entropy_case(rows, n, dt, 900 + rows + n, special);
        const Tensor got = cross_entropy(c.x, c.t);
        expect_bitwise_equal(got, chain(c, dt, dt), what.c_str());
      }
    }
  }
  // A mean over many rows averages the rows' roundings away; one counted row shows them.
  for (int64_t seed = 0; seed < 20; ++seed) {
    CrossEntropyCase c = cross_entropy_case(4, 1000, kFloat32, 980 + seed, false);
    c.t = from_vector<int64_t>({-100, -100, -100, 7}, {4});
    const Tensor got = cross_entropy(c.x, c.t);
    expect_bitwise_equal(got, chain(c, kFloat32, kFloat32), "one counted row");
    told_apart += got.item<float>() != chain(c, kFloat64, kFloat32).item<float>();
  }
  EXPECT_GT(told_apart, 0);
}

// cross_entropy is rewritten into that chain on the CPU: its targets' checks and target logits
// an eager step over the rows, each row's logsumexp one row kernel with the logits' producers,
// the mean a small kernel or two. Eager's bits on every ISA; its errors in both modes; its
// gradient (softmax minus the one-hot rows, compared with the class indices) fused likewise.
TEST_F(JitReducePlanTest, CrossEntropyOpIsARowKernelBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (int64_t n : {1, 17, 129, 1000}) {
        const std::string what = fmt::format("{} {} n={}", isa, dtype_name(dt), n);
        const CrossEntropyCase c = cross_entropy_case(9, n, dt, 950 + n, true);
        const Tensor b = randn_of({n}, 951, dt);
        int kernels = 0;
        tracer::RegionCache::instance().clear();
        std::string steps =
            run_both([&] { return TensorList{cross_entropy(c.x * 0.5 + b, c.t)}; }, what, &kernels);
        // The targets' count, the class indices and the target's view (eager steps reading
        // the targets and x's shape; Float32's targets also cast to the indices' Int32 by a
        // kernel over the rows); then one row kernel: the affine producer, each row's amax,
        // exps' sum, logsumexp and the target's logit (the logits masked where the class is
        // not the target, summed); then the Float64 losses (Float32's casts, the difference),
        // their masked sum over the rows and the mean (and its cast) in a kernel over the rows:
        // a 64-bit row value would halve a Float32 row kernel's lanes (planner.cpp has_64bit).
        // One class: the row ops join the row kernel (each row one element).
        const bool f32 = dt == kFloat32;
        const char* plan = n == 1 ? (f32 ? "e e e k17 k3" : "e e e k14 k2")
                                  : (f32 ? "e e k2 e k11 k8" : "e e e k12 k4");
        EXPECT_EQ(steps, plan) << what;
        EXPECT_EQ(kernels, f32 && n > 1 ? 3 : 2) << what;
        // The logits an input: their target logits are gathered (an eager step), the row
        // kernel is amax, exps' sum and logsumexp (Float64's also the difference).
        tracer::RegionCache::instance().clear();
        steps = run_both([&] { return TensorList{cross_entropy(c.x, c.t)}; }, what + " input",
                         &kernels);
        const char* gathered =
            n == 1 ? (f32 ? "e e e k10 k3" : "e e e k9 k2") : (f32 ? "e e e k6 k7" : "e e e k7 k4");
        EXPECT_EQ(steps, gathered) << what;
        tracer::RegionCache::instance().clear();
        run_both(
            [&] {
              const Tensor xg = c.x.detach().requires_grad_();
              const Tensor loss = cross_entropy(xg * 1.5, c.t);
              loss.backward();
              return TensorList{loss, xg.grad()};
            },
            what + " gradient");
      }
      // Unbatched, and a row longer than a chunk.
      tracer::RegionCache::instance().clear();
      const CrossEntropyCase u = cross_entropy_case(1, 300, dt, 960, false);
      run_both([&] { return TensorList{cross_entropy(u.x.select(0, 0) * 2.0, u.t.select(0, 0))}; },
               isa + " unbatched");
      tracer::RegionCache::instance().clear();
      const CrossEntropyCase l = cross_entropy_case(2, 140001, dt, 961, false);
      run_both([&] { return TensorList{cross_entropy(l.x - 1.0, l.t)}; }, isa + " long rows");
    }
  }
  // Every row ignored (0 / 0), no rows, rows of no classes (every one ignored), and a bad
  // target: the same result or error with the JIT.
  const CrossEntropyCase c = cross_entropy_case(6, 10, kFloat32, 970, false);
  tracer::RegionCache::instance().clear();
  run_both(
      [&] {
        return TensorList{
            cross_entropy(c.x * 2.0, full({6}, -100, TensorOptions().dtype(kInt64))),
            cross_entropy(zeros({0, 10}) * 2.0, zeros({0}, TensorOptions().dtype(kInt64))),
            cross_entropy(zeros({3, 0}) * 2.0, full({3}, -100, TensorOptions().dtype(kInt64)))};
      },
      "ignored, empty");
  for (bool jit : {false, true}) {
    JitMode mode(jit);
    tracer::RegionCache::instance().clear();
    expect_error(
        [&] {
          Tensor bad;
          {
            JitMode off(false);
            bad = c.t.clone();
            bad.narrow(0, 3, 1).fill_(10);
          }
          cross_entropy(c.x * 2.0, bad).item<float>();
        },
        "cross_entropy", "target 10 at position 3");
  }
  // Transposed logits (rows not contiguous): the op stays an eager step.
  tracer::RegionCache::instance().clear();
  const Tensor xt = randn_of({10, 6}, 971).t();
  EXPECT_EQ(run_both([&] { return TensorList{cross_entropy(xt, c.t) * 2.0}; }, "transposed"),
            "e k1");
}

// Sums of Int32, Int64 and Bool rows are row kernels (an Int64 sum of the values widened, as
// eager's wrapping uint64 sum: exact in any order), with their prologues: counting matches
// (`(a == b).sum(-1)`), a wrapping sum near the Int64 limits, a long row split across threads;
// eager's bits on every ISA. Over columns they are column kernels (test_jit_colreduce.cpp's
// IntegerSumsOverColumnsAreColumnKernels), with their prologues too.
TEST_F(JitReducePlanTest, IntegerSumsAreRowKernels) {
  const Tensor big = (randn_of({1, 140001}, 830) * 1000.0).to(kInt64) + (int64_t{1} << 62);
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (int64_t n : {1, 7, 17, 129, 1000}) {
      const std::string what = fmt::format("{} n={}", isa, n);
      const Tensor a = (randn_of({5, n}, static_cast<uint64_t>(n) + 820) * 4.0).to(kInt32);
      const Tensor b = (randn_of({5, n}, static_cast<uint64_t>(n) + 821) * 4.0).to(kInt32);
      const Tensor l = (randn_of({5, n}, static_cast<uint64_t>(n) + 822) * 1e6).to(kInt64) +
                       (int64_t{1} << 62);  // sums wrap past the Int64 limits
      int kernels = 0;
      tracer::RegionCache::instance().clear();
      const std::string steps = run_both(
          [&] {
            return TensorList{(a == b).sum({-1}), (a * 3 + 1).sum({-1}, true), (l * 2).sum({-1}),
                              (a > 0).sum({-1})};
          },
          what, &kernels);
      EXPECT_EQ(kernels, 1) << what << ": " << steps;  // a's, b's and l's rows in one kernel
      EXPECT_EQ(steps.find('e'), std::string::npos) << what << ": " << steps;
      tracer::RegionCache::instance().clear();
      EXPECT_EQ(run_both([&] { return TensorList{(a + 1).sum({0})}; }, what + " columns"), "k2")
          << what;
    }
    // A long row across two threads (run_row_chunks), wrapping.
    ConfigOverride<int> threads(config().num_threads, 2);
    tracer::RegionCache::instance().clear();
    const int64_t split_before = jit::cpu_jit_counters().split_row_launches.load();
    run_both(
        [&] {
          return TensorList{(big * 3).sum(), (big > int64_t{1} << 62).sum()};
        },
        isa + " long row");
    EXPECT_GT(jit::cpu_jit_counters().split_row_launches.load() - split_before, 0) << isa;
  }
}

// A gradient of a sum or a mean is a scalar expanded to its input's shape (stride 0 in every
// dim): a row kernel reads it as a broadcast along the row (planner.cpp row_friendly), so the
// backward of softmax, log_softmax and layer_norm under such a loss joins the forward's row
// kernel: one kernel (softmax under a sum: three before), also over two long rows split across two
// threads, where autograd records the gradient as an expand of a [1, 1] input (a view step,
// which the graph passes put first: jit/passes/sink_views.h hoist_views). Bitwise against eager on
// every ISA; an input expanded by the program itself too. The gradient of a reduction without
// keepdim, `g.unsqueeze(d).expand(x's shape)`, joins too: elementwise readers of the expand read
// the unsqueezed value and broadcast it (jit/passes/broadcast_operands.h), a node over the expand
// alone moves under it (mean's `/ N`), and an unsqueeze (or a squeeze) of a row value is that row
// value in the row kernel (planner.cpp row_alias_step): logsumexp, rms norm, softmax under a
// mean (each a view step between two kernels before). A row node may read a float input of
// one element per row (a row load: the sum's gradient `g / (2 * norm)`, std's): the gradients
// of a norm and of std (three kernels before). A mask computed from row values is a row value
// too (`norm >= eps`, the gradient mask of a clamp: a normalization's gradient, three kernels
// before). mse_loss, forward and backward, is one kernel (a dot product
// before: two kernels, two matrix products and six view steps). A row read with stride 0 in one
// dim of two and 1 in the other is no broadcast: still bitwise.
TEST_F(JitReducePlanTest, ExpandedGradientsJoinRowKernels) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (auto [rows, n, threads] : {std::array<int64_t, 3>{6, 37, 1}, {2, 140001, 2}}) {
      ConfigOverride<int> t(config().num_threads, static_cast<int>(threads));
      const std::string what = fmt::format("{} [{}, {}]", isa, rows, n);
      const Tensor x = randn_of({rows, n}, static_cast<uint64_t>(n) + 870);
      const Tensor ones_expanded = randn_of({1, 1}, 871).expand({rows, n});
      const Tensor w = randn_of({n}, 881), per_row = randn_of({rows, 1}, 882);
      Tensor xz = randn_of({rows, n}, 883);
      {
        JitMode off(false);
        xz.select(0, 0).fill_(0.0);
      }
      auto grad_of = [&](const std::function<Tensor(const Tensor&)>& loss) {
        return [&x, loss] {
          Tensor xx = x.detach().requires_grad_();
          loss(xx).backward();
          return TensorList{xx.grad()};
        };
      };
      const std::vector<std::pair<const char*, std::function<TensorList()>>> programs = {
          {"softmax, sum", grad_of([&](const Tensor& xx) { return (softmax(xx, -1) * x).sum(); })},
          {"log_softmax, mean", grad_of([&](const Tensor& xx) {
             return (log_softmax(xx, -1) * x).mean({0, 1});
           })},
          {"layer_norm, mean", grad_of([&](const Tensor& xx) {
             return (layer_norm(xx, {n}) * x).mean({0, 1});
           })},
          {"logsumexp", grad_of([](const Tensor& xx) { return xx.logsumexp({-1}).sum(); })},
          {"logsumexp and its gradient",
           [&] {
             Tensor xx = x.detach().requires_grad_();
             const Tensor l = xx.logsumexp({-1});
             l.sum().backward();
             return TensorList{l.detach(), xx.grad()};
           }},
          {"rms norm", grad_of([&](const Tensor& xx) {
             return (xx * ((xx * xx).mean({-1}, true) + 1e-6).rsqrt() * w * x).sum();
           })},
          {"softmax, mean",
           grad_of([&](const Tensor& xx) { return (softmax(xx, -1) * x).mean(); })},
          {"a squeezed and an unsqueezed row value",
           [&] {
             const Tensor m = x.amax({-1}, true);
             const Tensor l = (x - m).exp().sum({-1}).log() + m.squeeze(-1);
             return TensorList{x - l.unsqueeze(-1)};
           }},
          {"norm", grad_of([](const Tensor& xx) { return (xx * xx).sum({-1}).sqrt().sum(); })},
          {"std", grad_of([](const Tensor& xx) { return xx.std({-1}).sum(); })},
          {"normalize, a clamped norm",  // row 0 all zeros: the clamp's mask is false there
           [&] {
             Tensor xx = xz.detach().requires_grad_();
             (xx / (xx * xx).sum({-1}, true).sqrt().clamp(1e-12, 1e30) * x).sum().backward();
             return TensorList{xx.grad()};
           }},
          {"mse_loss and its gradient",  // the mean of the squares (ops/losses.cpp)
           [&] {
             Tensor xx = x.detach().requires_grad_();
             const Tensor l = mse_loss(xx * 2.0, x);
             l.backward();
             return TensorList{l.detach(), xx.grad()};
           }},
          {"a [rows, 1] input over a row value",
           [&] { return TensorList{x / ((x * x).sum({-1}, true).sqrt() * per_row)}; }},
          {"an expanded input",
           [&] {
             const Tensor y = softmax(x, -1);
             const Tensor p = (ones_expanded * x) * y;
             return TensorList{p - y * p.sum({-1}, true)};
           }},
      };
      for (const auto& [name, program] : programs) {
        tracer::RegionCache::instance().clear();
        int kernels = 0;
        const std::string steps = run_both(program, what + " " + name, &kernels);
        EXPECT_EQ(kernels, 1) << what << " " << name << ": " << steps;
        // Views first (the expand), then the one kernel.
        EXPECT_EQ(steps.find('e', steps.find('k')), std::string::npos)
            << what << " " << name << ": " << steps;
      }
    }
    // Rows of [a, b] reduced over both dims, read with strides [0, 1]: neither one contiguous run
    // nor a broadcast, so the value is computed by a kernel of its own, not loaded by the row
    // kernel.
    tracer::RegionCache::instance().clear();
    const Tensor part = randn_of({1, 5}, 872).expand({4, 5});  // strides [0, 1]
    const Tensor y = randn_of({3, 4, 5}, 873);
    int kernels = 0;
    run_both(
        [&] {
          return TensorList{(y * part).sum({1, 2})};
        },
        isa + " partly expanded", &kernels);
    EXPECT_GE(kernels, 1) << isa;
  }
}

// The kernel steps of the cached regions with a node of shape `sizes` (a kernel over that index
// space, or a row kernel whose rows have it).
int kernels_over(const DimVector& sizes) {
  int n = 0;
  for_each_kernel_step([&](const jit::JitPlan& p, const jit::KernelStep& k) {
    n += std::any_of(k.nodes.begin(), k.nodes.end(),
                     [&](int32_t j) { return p.graph().nodes[j].meta.sizes == sizes; });
  });
  return n;
}

// A value computed after a kernel from what is ready before it (cross_entropy's count of the
// counted rows and `g / count`, a gradient times a weight of the row's shape, a range of the
// classes) moves up before that kernel when a node of the kernel reads it (planner.cpp
// move_up): cross_entropy forward and backward is one kernel over the logits (two before: the
// backward's softmax and its scaling around the small kernels), as is a weighted logsumexp's
// backward (two before).
TEST_F(JitReducePlanTest, SmallValuesComputedLaterMoveUpBeforeTheirReader) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (auto [rows, n, threads] : {std::array<int64_t, 3>{6, 37, 1}, {2, 140001, 2}}) {
      ConfigOverride<int> t(config().num_threads, static_cast<int>(threads));
      const std::string what = fmt::format("{} [{}, {}]", isa, rows, n);
      const CrossEntropyCase c = cross_entropy_case(rows, n, kFloat32, 990 + n, rows > 2);
      const Tensor b = randn_of({n}, 991), w = randn_of({rows}, 992);
      const std::vector<std::pair<const char*, std::function<TensorList()>>> programs = {
          {"cross_entropy",
           [&] {
             const Tensor xg = c.x.detach().requires_grad_();
             const Tensor loss = cross_entropy(xg * 0.5 + b, c.t);
             loss.backward();
             return TensorList{loss, xg.grad()};
           }},
          {"weighted logsumexp",
           [&] {
             const Tensor xg = c.x.detach().requires_grad_();
             (xg.logsumexp({-1}) * w).sum().backward();
             return TensorList{xg.grad()};
           }},
      };
      for (const auto& [name, program] : programs) {
        tracer::RegionCache::instance().clear();
        const std::string steps = run_both(program, what + " " + name);
        EXPECT_EQ(kernels_over({rows, n}), 1) << what << " " << name << ": " << steps;
      }
    }
  }
}

// Counts of masks read by float arithmetic are Float64 sums (jit/passes/float_counts.h), which
// row kernels read: amax's gradient `g / (x == max).sum(-1, keepdim)` (ties: values rounded to
// a few levels) and a masked mean `(x * m).sum(-1) / m.sum(-1)` (a row of no ones: 0 / 0) are
// one kernel each (two before), bitwise; a count an integer op reads stays an Int64 sum.
TEST_F(JitReducePlanTest, MaskCountsReadByFloatArithmeticAreFloatSums) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (auto [rows, n, threads] : {std::array<int64_t, 3>{6, 37, 1}, {2, 140001, 2}}) {
      ConfigOverride<int> t(config().num_threads, static_cast<int>(threads));
      const std::string what = fmt::format("{} [{}, {}]", isa, rows, n);
      Tensor x, m;
      {
        JitMode off(false);
        x = (randn_of({rows, n}, static_cast<uint64_t>(n) + 890) * 2.0).round();  // ties
        m = randn_of({rows, n}, 891) > 0.5;
        m.select(0, 0).fill_(false);  // a row of no ones
      }
      const std::vector<std::pair<const char*, std::function<TensorList()>>> programs = {
          {"amax's gradient",
           [&] {
             Tensor xx = x.detach().requires_grad_();
             xx.amax({-1}).sum().backward();
             return TensorList{xx.grad()};
           }},
          {"a masked mean", [&] { return TensorList{(x * m).sum({-1}) / m.sum({-1})}; }},
      };
      for (const auto& [name, program] : programs) {
        tracer::RegionCache::instance().clear();
        int kernels = 0;
        const std::string steps = run_both(program, what + " " + name, &kernels);
        EXPECT_EQ(kernels, 1) << what << " " << name << ": " << steps;
      }
      tracer::RegionCache::instance().clear();
      run_both(
          [&] {
            return TensorList{m.sum({-1}) * 3, (x * m).sum({-1}) / m.sum({-1})};
          },
          what + " an integer reader too");
    }
  }
}

// Row reductions of different inputs of one shape share a row kernel (planner.cpp: a reduction
// with no kernel computing or reading its input joins the latest row kernel of its shape, and
// so does a prologue node that only feeds such reductions): `x.sum(-1) + y.sum(-1)`, a cosine
// similarity's three sums and their epilogue, sums of squares under a sqrt; one kernel each
// (three before), bitwise equal to eager on every ISA, rows of one element to rows split across
// two threads. A prologue that is also a graph output keeps its own store but joins too.
TEST_F(JitReducePlanTest, RowReductionsOfOtherInputsShareOneRowKernel) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (int64_t n : {1, 7, 100, 1031}) {
      const std::string what = fmt::format("{} n={}", isa, n);
      const uint64_t sd = static_cast<uint64_t>(n);
      const Tensor x = randn_of({6, n}, sd + 850), y = randn_of({6, n}, sd + 851);
      const Tensor z = randn_of({6, n}, sd + 852, kFloat64);
      auto one_kernel = [&](const std::function<TensorList()>& program, const char* name) {
        tracer::RegionCache::instance().clear();
        int kernels = 0;
        const std::string steps = run_both(program, what + " " + name, &kernels);
        EXPECT_EQ(kernels, 1) << what << " " << name << ": " << steps;
        EXPECT_EQ(steps.find('e'), std::string::npos) << what << " " << name << ": " << steps;
      };
      one_kernel([&] { return TensorList{x.sum({-1}) + y.sum({-1}, false)}; }, "two sums");
      one_kernel(
          [&] {
            return TensorList{(x * y).sum({-1}) /
                              ((x * x).sum({-1}).sqrt() * (y * y).sum({-1}).sqrt() + 1e-8)};
          },
          "cosine similarity");
      one_kernel(
          [&] {
            return TensorList{(x * x).sum({-1}, true).sqrt() * (y * y).amax({-1}, true),
                              z.logsumexp({-1}) + (x - y).abs().mean({-1})};
          },
          "four reductions, two dtypes");
      one_kernel(
          [&] {
            const Tensor u = y * y;
            const Tensor su = u.sum({-1});  // u's kernel is a row kernel from here on
            return TensorList{u, su + x.sum({-1})};
          },
          "a stored prologue");
    }
    // Two long rows (chunks split across two threads), each sum of its own input.
    ConfigOverride<int> threads(config().num_threads, 2);
    tracer::RegionCache::instance().clear();
    const Tensor a = randn_of({2, 140001}, 860), b = randn_of({2, 140001}, 861);
    int kernels = 0;
    run_both([&] { return TensorList{(a * a).sum({-1}) - b.sum({-1})}; }, isa + " long rows",
             &kernels);
    EXPECT_EQ(kernels, 1) << isa;
  }
}

// A sum or mean of a leaf that nothing else reads, alone over its index space, fuses nothing:
// it stays the eager node (jit/plan/lone_reductions.h; eager's vectorized sum is as fast, and
// faster over short rows). A sum of a computed value, two sums over one index space, a leaf
// that another node reads, or a column reduction keep their kernel. Eager's bits either way.
TEST_F(JitReducePlanTest, LoneSumsOfLeavesStayEagerNodes) {
  const Tensor x = randn_of({64, 32, 32}, 870), y = randn_of({64, 32, 32}, 871);
  auto steps_of = [&](const std::function<TensorList()>& program, const char* name) {
    tracer::RegionCache::instance().clear();
    int kernels = 0;
    const std::string steps = run_both(program, name, &kernels);
    return std::pair{kernels, steps};
  };
  for (const auto& [name, program] :
       std::vector<std::pair<const char*, std::function<TensorList()>>>{
           {"x.sum()", [&] { return TensorList{x.sum() * 2.0}; }},
           {"short rows", [&] { return TensorList{x.mean({-1}) * 2.0}; }},
           {"a reshaped leaf",
            [&] {
              return TensorList{x.reshape({64, 1024}).sum({-1}) * 2.0};
            }},
           {"x.sum(-1)", [&] { return TensorList{x.sum({-1}) * 2.0}; }}}) {
    // The reduction an eager step, the multiply a kernel of its own (fused with the
    // reduction, it would be one kernel of both).
    const auto [kernels, steps] = steps_of(program, name);
    EXPECT_EQ(steps, "e k1") << name;
  }
  for (const auto& [name, program] :
       std::vector<std::pair<const char*, std::function<TensorList()>>>{
           {"a computed value", [&] { return TensorList{(x * 2.0).sum({-1})}; }},
           {"two sums", [&] { return TensorList{x.sum({-1}) + y.sum({-1})}; }},
           {"a sum and a max",
            [&] {
              return TensorList{x.sum({-1}), x.amax({-1})};
            }},
           {"a leaf read twice",
            [&] {
              return TensorList{x.sum({-1}), x * 3.0};
            }},
           {"columns (the JIT's are faster)", [&] { return TensorList{x.mean({0}) * 2.0}; }}}) {
    const auto [kernels, steps] = steps_of(program, name);
    EXPECT_GE(kernels, 1) << name << ": " << steps;
  }
}

// Products of Int32, Int64 and Bool rows and columns are kernels too (an Int64 product of the
// values widened, as eager's wrapping product: exact in any order): small factors of both signs
// (products that stay exact), long rows whose products wrap past the Int64 limits, Bool rows
// (all()), keepdim, columns, a 3-D input over {0, 1}, a long row across two threads; eager's
// bits on every ISA. An identity of 1.0's bits (or a float multiply) fails it.
TEST_F(JitReducePlanTest, IntegerProductsAreRowAndColumnKernels) {
  const Tensor big = (randn_of({1, 140001}, 840) * 3.0).to(kInt64) * 2 + 1;  // odd: never 0
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (int64_t n : {1, 7, 17, 129, 1000}) {
      const std::string what = fmt::format("{} n={}", isa, n);
      const uint64_t sd = static_cast<uint64_t>(n);
      const Tensor a = (randn_of({5, n}, sd + 830) * 1.2).to(kInt32);          // -3 .. 3, zeros too
      const Tensor w = (randn_of({5, n}, sd + 831) * 1e4).to(kInt32) * 2 + 1;  // wraps
      const Tensor l = (randn_of({5, n}, sd + 832) * 1e9).to(kInt64) * 2 + 1;
      const Tensor c = (randn_of({n, 3, 19}, sd + 833) * 1.5).to(kInt64);
      int kernels = 0;
      tracer::RegionCache::instance().clear();
      const std::string steps = run_both(
          [&] {
            return TensorList{(a.sign() + a).prod({-1}), (w * 3).prod({-1}, true),
                              (l + 2).prod({-1}), (a >= 0).prod({-1})};
          },
          what, &kernels);
      EXPECT_EQ(steps.find('e'), std::string::npos) << what << ": " << steps;
      tracer::RegionCache::instance().clear();
      const std::string cols = run_both(
          [&] {
            return TensorList{(c - 1).prod({0}), (c + 1).prod({0, 1}, true)};
          },
          what + " columns");
      EXPECT_EQ(cols.find('e'), std::string::npos) << what << ": " << cols;
    }
    // A long row across two threads (run_row_chunks), wrapping.
    ConfigOverride<int> threads(config().num_threads, 2);
    tracer::RegionCache::instance().clear();
    const int64_t split_before = jit::cpu_jit_counters().split_row_launches.load();
    run_both([&] { return TensorList{(big * 3).prod()}; }, isa + " long row");
    EXPECT_GT(jit::cpu_jit_counters().split_row_launches.load() - split_before, 0) << isa;
  }
}

}  // namespace
}  // namespace kiln
