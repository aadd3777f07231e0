// Column kernels (reductions over outer dims with the inner dims kept, loop_kernel.h "Column
// kernels", docs/jit.md "Column reductions"): the column program against eager's col_block
// order, hand-built column kernels launched directly against the eager reductions bitwise
// (every op, both float dtypes, every ISA path, row counts around eager's 64-row runs and
// 2048-row chunks, column counts around the vector widths and their tails, NaN and signed
// zeros, a broadcast prologue operand, element stores, 1 and 2 threads), and what has no
// machine code (fewer than 16 columns, a reduced input that is not row-major, strided columns,
// a plain reduction eager spreads over more threads).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/loop/row_program.h"
#include "jit/target.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "ops/cpu/reduce_plan.h"
#include "record_util.h"
#include "suite_passes.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

using jit::ExprOp;
using jit::LoopKernel;
using testing::ConfigOverride;
using testing::expect_bitwise_equal;
using testing::JitMode;

// The column program's pieces against a direct transcription of eager's col_block recursion
// and chunk tree (ops/cpu/reduce_loops.h): pieces of <= 64 rows, halves at floor(len / 2).
TEST(JitColumnProgram, FollowsEagersColumnOrder) {
  EXPECT_EQ(jit::column_program(0), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(jit::column_program(64), (std::vector<int64_t>{1, 64, 0, 0}));
  EXPECT_EQ(jit::column_program(65), (std::vector<int64_t>{1, 32, 0, 1, 33, 0, 2, 0}));
  EXPECT_EQ(jit::column_program(129),
            (std::vector<int64_t>{1, 64, 0, 1, 32, 0, 1, 33, 0, 2, 2, 0}));
  // 2049 rows: a 2048-row chunk (32 runs of 64) and a chunk of one row, combined.
  const std::vector<int64_t> p = jit::column_program(2049);
  int64_t pieces = 0, rows = 0;
  for (size_t i = 0; p[i] != 0;) {
    if (p[i] == 1) {
      ++pieces;
      rows += p[i + 1];
      EXPECT_EQ(p[i + 1], pieces <= 32 ? 64 : 1);
      i += 3;
    } else {
      i += 1;
    }
  }
  EXPECT_EQ(pieces, 33);
  EXPECT_EQ(rows, 2049);
  EXPECT_EQ(p[p.size() - 2], 2);  // the two chunks combine last
  EXPECT_EQ(jit::program_depth(jit::column_program(64)), 1);
  EXPECT_EQ(jit::program_depth(jit::column_program(65)), 2);
  EXPECT_EQ(jit::program_depth(jit::column_program(int64_t{1} << 24)), 19);  // 13 + 6
}

Tensor eager_col(ExprOp op, const Tensor& x) {
  switch (op) {
    case ExprOp::ReduceSum:
      return x.sum({1}, true);
    case ExprOp::ReduceProd:
      return x.prod({1}, true);
    case ExprOp::ReduceMax:
      return x.amax({1}, true);
    default:
      return x.amin({1}, true);
  }
}

// Values with the specials the order shows (as tests/test_jit_reduce.cpp's row_data).
Tensor col_data(int64_t a, int64_t n, int64_t c, DType dt, ExprOp op, uint64_t seed, bool nan) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> v(static_cast<size_t>(a * n * c));
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
  return from_vector<double>(v, {a, n, c}).to(dt);
}

char* ptr_of(const Tensor& t) { return static_cast<char*>(const_cast<void*>(t.raw_data())); }

// Launches column kernel `k` over [A, N, C] reducing N: input 0 = x, input 1 = w ([C], broadcast
// over A and N); outputs as `row_out` says (an [A, 1, C] row value, else [A, N, C]).
// `out_types`: the outputs' dtypes where they are not x's (an argmax's Int64 rows).
std::vector<Tensor> launch_cols(jit::CompiledKernel& kernel, const Tensor& x, const Tensor& w,
                                const std::vector<bool>& row_out, bool expect_launch = true,
                                const std::vector<DType>& out_types = {}) {
  const int64_t a = x.sizes()[0], n = x.sizes()[1], c = x.sizes()[2];
  const int64_t es = static_cast<int64_t>(itemsize(x.dtype()));
  jit::LaunchArgs la;
  la.sizes = {a, n, c};
  la.reduced_dims = 1;
  la.inner_dims = 1;
  std::vector<Tensor> outs;
  for (size_t i = 0; i < row_out.size(); ++i) {
    const bool r = row_out[i];
    const DType dt = i < out_types.size() ? out_types[i] : x.dtype();
    const int64_t os = static_cast<int64_t>(itemsize(dt));
    Tensor o = empty(r ? DimVector{a, 1, c} : DimVector{a, n, c}, TensorOptions().dtype(dt));
    la.ptrs.push_back(ptr_of(o));
    la.strides.push_back(r ? DimVector{c * os, 0, os} : DimVector{n * c * os, c * os, os});
    outs.push_back(o);
  }
  la.ptrs.push_back(ptr_of(x));
  la.strides.push_back({x.strides()[0] * es, x.strides()[1] * es, x.strides()[2] * es});
  la.ptrs.push_back(ptr_of(w));
  la.strides.push_back({0, 0, w.strides()[0] * es});
  EXPECT_EQ(kernel.can_launch(la), expect_launch);
  if (expect_launch) kernel.launch(la);
  return outs;
}

// out0 = reduce(x) (the input as loaded); out1 = reduce(x * w) (a prologue with an operand
// broadcast over the rows); out2 = x * w (an element store in the same pass).
LoopKernel col_kernel(DType dt, ExprOp op) {
  LoopKernel k = LoopKernel::uniform(dt, 2);
  const int32_t x = k.load(0), w = k.load(1);
  const int32_t r = k.reduce(op, x);
  const int32_t p = k.binary(ExprOp::Mul, x, w);
  k.stores = {r, k.reduce(op, p), p};
  return k;
}

// A kernel compiled with the planner's hint that it runs as a column kernel renders its column
// variant while compiling, and its launches render nothing more; without the hint, the plain
// row variant is rendered while compiling (unused) and the column one at the first launch.
TEST(JitColumnKernels, CompiledForColumnsRendersTheColumnVariantOnly) {
  // Eager around the direct target calls: with KILN_JIT=1 the inputs would be recorded and
  // compiled when the launch reads them, and the ops launch_cols runs too, all counted; and no
  // background planning of an earlier test may still be compiling (the counter is global).
  tracer::wait_for_compiles();
  JitMode eager(false);
  const Tensor x = col_data(3, 40, 70, kFloat32, ExprOp::ReduceSum, 11, false);
  const Tensor w = col_data(1, 1, 70, kFloat32, ExprOp::ReduceSum, 12, false).reshape({70});
  jit::CpuJitCounters& c = jit::cpu_jit_counters();
  for (const std::string& isa : testing::supported_jit_isas()) {
    testing::ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (bool hinted : {true, false}) {
      // sum(x * w * c0): c0 unique to this test and case, so the renders are new.
      const double c0 = (hinted ? 1.0 : 2.0) + (isa == "sse2" ? 0.125 : isa == "avx2" ? 0.25 : 0.5);
      LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
      k.stores = {k.reduce(ExprOp::ReduceSum,
                           k.binary(ExprOp::Mul, k.binary(ExprOp::Mul, k.load(0), k.load(1)),
                                    k.constant(c0, DType::Float32)))};
      const int64_t before = c.kernels.load();
      std::shared_ptr<jit::CompiledKernel> kernel =
          jit::cpu_target().compile(k, jit::CpuLaunchHint{0, hinted});
      EXPECT_EQ(c.kernels.load(), before + 1) << isa;
      const std::vector<Tensor> out = launch_cols(*kernel, x, w, {true});
      EXPECT_EQ(c.kernels.load(), before + (hinted ? 1 : 2)) << isa << " hinted " << hinted;
      testing::expect_bitwise_equal(out[0], (x * w * c0).sum({1}, true), isa.c_str());
    }
  }
}

TEST(JitColumnKernels, EveryOpDtypeIsaRowAndColumnCountMatchesEagerBitwise) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  const ExprOp ops[] = {ExprOp::ReduceSum, ExprOp::ReduceProd, ExprOp::ReduceMax,
                        ExprOp::ReduceMin};
  struct Shape {
    int64_t a, n, c;
  };
  // Rows around the 64-row runs, the two- and four-run folds and the 2048-row chunks; columns
  // around 8, 16 and 64 lanes (the blocks of 4 vectors) and their tails.
  const Shape shapes[] = {{1, 0, 16},    {2, 1, 17},    {1, 2, 31},    {2, 7, 33},   {1, 63, 64},
                          {2, 64, 65},   {1, 65, 100},  {1, 129, 129}, {2, 300, 16}, {1, 2047, 19},
                          {1, 2048, 40}, {1, 2049, 70}, {1, 4100, 24}, {2, 255, 18}};
  uint64_t seed = 1;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (ExprOp op : ops) {
        std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(col_kernel(dt, op));
        for (const Shape& s : shapes) {
          if (s.n == 0 && (op == ExprOp::ReduceMax || op == ExprOp::ReduceMin)) continue;
          for (bool nan : {false, true}) {
            const Tensor x = col_data(s.a, s.n, s.c, dt, op, seed++, nan);
            const Tensor w =
                col_data(1, 1, s.c, dt, ExprOp::ReduceProd, seed++, false).reshape({s.c});
            const std::vector<Tensor> got = launch_cols(*kernel, x, w, {true, true, false});
            const std::string what =
                fmt::format("{} {} {} [{}, {}, {}] nan={}", isa, dtype_name(dt), expr_op_name(op),
                            s.a, s.n, s.c, nan);
            expect_bitwise_equal(got[0], eager_col(op, x), what.c_str());
            expect_bitwise_equal(got[1], eager_col(op, x * w), what.c_str());
            expect_bitwise_equal(got[2], x * w, what.c_str());
          }
        }
      }
    }
  }
}

// A mean (ReduceSum / RowSize) and a max in one column kernel of Float64 with a Float32 input
// (8 lanes on AVX-512, the Float32 values in half registers).
// An epilogue: out1 = x - reduce(x * w), out2 = x * w, both stored by the second pass over
// each block's rows; the sum's mean hoisted once per block. Also with the rows split across
// threads by chunks.
TEST(JitColumnKernels, EpilogueMatchesEagerBitwise) {
  const ExprOp ops[] = {ExprOp::ReduceSum, ExprOp::ReduceMax};
  uint64_t seed = 500;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (ExprOp op : ops) {
        LoopKernel k = LoopKernel::uniform(dt, 2);
        const int32_t x = k.load(0), w = k.load(1);
        const int32_t p = k.binary(ExprOp::Mul, x, w);
        const int32_t r = k.reduce(op, p);
        const int32_t m = k.binary(ExprOp::Div, r, k.row_size(dt));
        k.stores = {m, k.binary(ExprOp::Sub, x, m), p};
        std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
        for (int64_t c : {16, 21, 70, 129}) {
          for (int64_t n : {1, 65, 300}) {
            const Tensor xt = col_data(2, n, c, dt, op, seed++, true);
            const Tensor wt = col_data(1, 1, c, dt, ExprOp::ReduceProd, seed++, false).reshape({c});
            const std::vector<Tensor> got = launch_cols(*kernel, xt, wt, {true, false, false});
            const Tensor want = eager_col(op, xt * wt) / static_cast<double>(n);
            const std::string what =
                fmt::format("{} {} {} [2, {}, {}]", isa, dtype_name(dt), expr_op_name(op), n, c);
            expect_bitwise_equal(got[0], want, what.c_str());
            expect_bitwise_equal(got[1], xt - want, what.c_str());
            expect_bitwise_equal(got[2], xt * wt, what.c_str());
          }
        }
        // One call over more than one 2048-row chunk on 2 and 3 threads: the rows split by
        // chunks, the combined level kept, then the epilogue's rows by chunks (launch_cols).
        for (int threads : {2, 3})
          for (int64_t n : {2049, 4100}) {
            ConfigOverride<int> t(config().num_threads, threads);
            const Tensor xt = col_data(1, n, 70, dt, op, seed++, n == 4100);
            const Tensor wt =
                col_data(1, 1, 70, dt, ExprOp::ReduceProd, seed++, false).reshape({70});
            const std::vector<Tensor> got = launch_cols(*kernel, xt, wt, {true, false, false});
            const Tensor want = eager_col(op, xt * wt) / static_cast<double>(n);
            const std::string what = fmt::format("{} {} {} [1, {}, 70] on {}", isa, dtype_name(dt),
                                                 expr_op_name(op), n, threads);
            expect_bitwise_equal(got[0], want, what.c_str());
            expect_bitwise_equal(got[1], xt - want, what.c_str());
            expect_bitwise_equal(got[2], xt * wt, what.c_str());
          }
      }
    }
  }
}

TEST(JitColumnKernels, MeanAndMixedWidthsMatchEagerBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    LoopKernel k;
    k.inputs = {kFloat32, kFloat64};
    const int32_t x = k.load(0), w = k.load(1);
    const int32_t xd = k.cast(x, kFloat64);
    const int32_t mean =
        k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, xd), k.row_size(kFloat64));
    k.stores = {mean, k.reduce(ExprOp::ReduceMax, x),
                k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Add, xd, w))};
    std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
    for (int64_t c : {16, 23, 50}) {
      const Tensor xt = col_data(2, 130, c, kFloat32, ExprOp::ReduceSum, 5, false);
      const Tensor wt = col_data(1, 1, c, kFloat64, ExprOp::ReduceSum, 6, false).reshape({c});
      const int64_t n = 130;
      jit::LaunchArgs la;
      la.sizes = {2, n, c};
      la.reduced_dims = 1;
      la.inner_dims = 1;
      Tensor o0 = empty({2, 1, c}, TensorOptions().dtype(kFloat64));
      Tensor o1 = empty({2, 1, c}, TensorOptions().dtype(kFloat32));
      Tensor o2 = empty({2, 1, c}, TensorOptions().dtype(kFloat64));
      la.ptrs = {ptr_of(o0), ptr_of(o1), ptr_of(o2), ptr_of(xt), ptr_of(wt)};
      la.strides = {{c * 8, 0, 8}, {c * 4, 0, 4}, {c * 8, 0, 8}, {n * c * 4, c * 4, 4}, {0, 0, 8}};
      ASSERT_TRUE(kernel->can_launch(la));
      kernel->launch(la);
      const Tensor xd64 = xt.to(kFloat64);
      const std::string what = fmt::format("{} c={}", isa, c);
      expect_bitwise_equal(o0, xd64.mean({1}, true), what.c_str());
      expect_bitwise_equal(o1, xt.amax({1}, true), what.c_str());
      expect_bitwise_equal(o2, (xd64 + wt).sum({1}, true), what.c_str());
    }
  }
}

// One 64-bit sum of 4-byte values (Float32 -> Float64, Int32 -> Int64): on AVX-512 its blocks
// are 8 vectors of 8 columns, not 4 (render_cols.cpp, `narrow`), so the columns around 64 and
// the blocks' tails are checked bitwise against eager on every ISA.
TEST(JitColumnKernels, WideSumsOfNarrowValuesMatchEagerBitwise) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (auto [in, out] : {std::pair{kFloat32, kFloat64}, std::pair{kInt32, kInt64}}) {
      LoopKernel k;
      k.inputs = {in};
      k.stores = {k.reduce(ExprOp::ReduceSum, k.cast(k.load(0), out))};
      std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
      for (int64_t c : {16, 40, 63, 64, 65, 100, 129, 200})
        for (int64_t n : {1, 64, 65, 130}) {
          const Tensor x = (col_data(1, n, c, kFloat64, ExprOp::ReduceSum, 9, false) * 1e5).to(in);
          jit::LaunchArgs la;
          la.sizes = {1, n, c};
          la.reduced_dims = 1;
          la.inner_dims = 1;
          Tensor o = empty({1, 1, c}, TensorOptions().dtype(out));
          const int64_t es = static_cast<int64_t>(itemsize(in));
          la.ptrs = {ptr_of(o), ptr_of(x)};
          la.strides = {{c * 8, 0, 8}, {n * c * es, c * es, es}};
          ASSERT_TRUE(kernel->can_launch(la));
          kernel->launch(la);
          expect_bitwise_equal(o, x.to(out).sum({1}, true),
                               fmt::format("{} {} c={} n={}", isa, dtype_name(in), c, n).c_str());
        }
    }
  }
}

// Int64 sums (the planner's integer and Bool sums over columns) of 4-, 8- and 1-byte operands in
// one kernel: the accumulators, partial results and row stores in 64-bit lanes with 64-bit adds.
// Int32 values near 2^30 (sums past 32 bits) and Int64 ones near 2^62 (sums that wrap), rows
// around the 64-row runs and 2048-row chunks, columns around every ISA's blocks and tails.
// Int64 on the 32-bit lanes' emitter (half registers, vpaddd) fails it.
TEST(JitColumnKernels, Int64SumsOfMixedWidthsMatchEagerBitwise) {
  struct Shape {
    int64_t a, n, c;
  };
  const Shape shapes[] = {{1, 0, 16},   {2, 1, 17},   {1, 5, 37},    {2, 7, 33},
                          {1, 63, 64},  {2, 64, 65},  {1, 100, 37},  {1, 129, 129},
                          {2, 300, 16}, {1, 300, 60}, {1, 2049, 70}, {2, 255, 18}};
  uint64_t seed = 900;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    LoopKernel k;
    k.inputs = {kInt32, kInt64, kBool};
    k.stores = {k.reduce(ExprOp::ReduceSum, k.cast(k.load(0), kInt64)),
                k.reduce(ExprOp::ReduceSum, k.load(1)),
                k.reduce(ExprOp::ReduceSum, k.cast(k.load(2), kInt64))};
    std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
    for (int threads : {1, 2}) {
      ConfigOverride<int> t(config().num_threads, threads);
      for (const Shape& s : shapes) {
        std::mt19937_64 rng(seed++);
        const size_t count = static_cast<size_t>(s.a * s.n * s.c);
        std::vector<int32_t> xi(count);
        std::vector<int64_t> yi(count);
        std::vector<double> bi(count);
        for (size_t i = 0; i < count; ++i) {
          xi[i] = static_cast<int32_t>((int64_t{1} << 30) - static_cast<int64_t>(rng() % 2000000));
          if (rng() % 3 == 0) xi[i] = -xi[i];
          yi[i] = (int64_t{1} << 62) + static_cast<int64_t>(rng() % 100000) - 50000;
          bi[i] = static_cast<double>(rng() % 2);
        }
        const Tensor x = from_vector<int32_t>(xi, {s.a, s.n, s.c});
        const Tensor y = from_vector<int64_t>(yi, {s.a, s.n, s.c});
        const Tensor b = from_vector<double>(bi, {s.a, s.n, s.c}).to(kBool);
        jit::LaunchArgs la;
        la.sizes = {s.a, s.n, s.c};
        la.reduced_dims = 1;
        la.inner_dims = 1;
        std::vector<Tensor> outs;
        for (int j = 0; j < 3; ++j) {
          outs.push_back(empty({s.a, 1, s.c}, TensorOptions().dtype(kInt64)));
          la.ptrs.push_back(ptr_of(outs.back()));
          la.strides.push_back({s.c * 8, 0, 8});
        }
        for (const Tensor* in : {&x, &y, &b}) {
          const int64_t es = static_cast<int64_t>(itemsize(in->dtype()));
          la.ptrs.push_back(ptr_of(*in));
          la.strides.push_back({s.n * s.c * es, s.c * es, es});
        }
        const std::string what =
            fmt::format("{} threads {} [{}, {}, {}]", isa, threads, s.a, s.n, s.c);
        if (!kernel->can_launch(la)) {  // eager splits the 2048-row chunks across the threads
          EXPECT_TRUE(threads > 1 && s.n > 2048) << what;
          continue;
        }
        kernel->launch(la);
        expect_bitwise_equal(outs[0], x.sum({1}, true), what.c_str());
        expect_bitwise_equal(outs[1], y.sum({1}, true), what.c_str());
        expect_bitwise_equal(outs[2], b.sum({1}, true), what.c_str());
      }
    }
  }
}

TEST(JitColumnKernels, ResultsDoNotDependOnTheThreadCount) {
  const Tensor x = col_data(3, 5000, 300, kFloat32, ExprOp::ReduceSum, 11, false);
  const Tensor w = ones({300});
  std::shared_ptr<jit::CompiledKernel> kernel =
      jit::cpu_target().compile(col_kernel(kFloat32, ExprOp::ReduceSum));
  std::vector<Tensor> one, two;
  {
    ConfigOverride<int> t(config().num_threads, 1);
    one = launch_cols(*kernel, x, w, {true, true, false});
  }
  {
    ConfigOverride<int> t(config().num_threads, 2);
    two = launch_cols(*kernel, x, w, {true, true, false});
  }
  expect_bitwise_equal(one[0], two[0]);
  expect_bitwise_equal(one[1], two[1]);
  expect_bitwise_equal(two[0], x.sum({1}, true));
}

// A kernel of row values only in fewer calls than threads over more than one 2048-row chunk
// splits its calls' rows by chunks (cpu_kernel_reduce.cpp column_calls): each chunk's level
// popped into a slot (word 4), then one call per block pushing them (word 3) in the chunk
// tree. Bitwise eager's on every ISA, 2 and 3 threads, Float32 and Float64, rows around the
// chunks, a sum of a product, a max of a sum and a mean (RowSize: all the rows, not a chunk's),
// and an argmax and argmin (rows counted from each chunk's first).
TEST(JitColumnKernels, RowsSplitAcrossThreadsByChunks) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  uint64_t seed = 40;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      LoopKernel k = LoopKernel::uniform(dt, 2);
      const int32_t x = k.load(0), w = k.load(1);
      const int32_t sum = k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, x, w));
      const int32_t mx = k.reduce(ExprOp::ReduceMax, k.binary(ExprOp::Add, x, w));
      k.stores = {sum, mx, k.binary(ExprOp::Div, sum, k.row_size(dt))};
      std::shared_ptr<jit::CompiledKernel> kernel = jit::cpu_target().compile(k);
      for (int threads : {2, 3})
        for (int64_t n : {2049, 4096, 6145, 10000}) {
          ConfigOverride<int> t(config().num_threads, threads);
          const Tensor xv = col_data(1, n, 40, dt, ExprOp::ReduceSum, seed++, n == 6145);
          const Tensor wv = col_data(1, 1, 40, dt, ExprOp::ReduceProd, seed++, false).reshape({40});
          const std::vector<Tensor> got = launch_cols(*kernel, xv, wv, {true, true, true});
          const std::string what =
              fmt::format("{} {} {} rows on {}", isa, dtype_name(dt), n, threads);
          expect_bitwise_equal(got[0], eager_col(ExprOp::ReduceSum, xv * wv), what.c_str());
          expect_bitwise_equal(got[1], eager_col(ExprOp::ReduceMax, xv + wv), what.c_str());
          expect_bitwise_equal(got[2], (xv * wv).mean({1}, true), what.c_str());
          if (dt != kFloat64) continue;
          // argmax / argmin (Float64 values): each chunk's rows counted from its first, the
          // levels combined in the tree (a tie keeps the earlier chunk's row; the first NaN wins).
          LoopKernel a = LoopKernel::uniform(dt, 2);
          const int32_t p = a.binary(ExprOp::Mul, a.load(0), a.load(1));
          a.stores = {a.reduce_arg(ExprOp::ReduceArgMax, p), a.reduce_arg(ExprOp::ReduceArgMin, p)};
          std::shared_ptr<jit::CompiledKernel> arg = jit::cpu_target().compile(a);
          const std::vector<Tensor> idx =
              launch_cols(*arg, xv, wv, {true, true}, true, {kInt64, kInt64});
          expect_bitwise_equal(idx[0], (xv * wv).argmax(1, true), what.c_str());
          expect_bitwise_equal(idx[1], (xv * wv).argmin(1, true), what.c_str());
        }
      // Two outer indices on three threads (two calls, each split), and 4100 columns (two
      // blocks of columns, each split): the calls' places in phase 1 and 2.
      if (dt != kFloat32) continue;
      ConfigOverride<int> t(config().num_threads, 3);
      for (auto [a, n, c] : {std::tuple<int64_t, int64_t, int64_t>{2, 3000, 40}, {1, 2100, 4100}}) {
        const Tensor xv = col_data(a, n, c, dt, ExprOp::ReduceSum, seed++, false);
        const Tensor wv = col_data(1, 1, c, dt, ExprOp::ReduceProd, seed++, false).reshape({c});
        const std::vector<Tensor> got = launch_cols(*kernel, xv, wv, {true, true, true});
        const std::string what = fmt::format("{} [{}, {}, {}] on 3", isa, a, n, c);
        expect_bitwise_equal(got[0], eager_col(ExprOp::ReduceSum, xv * wv), what.c_str());
        expect_bitwise_equal(got[1], eager_col(ExprOp::ReduceMax, xv + wv), what.c_str());
        expect_bitwise_equal(got[2], (xv * wv).mean({1}, true), what.c_str());
      }
    }
  }
}

// Fewer than 16 columns (eager's 16-column windows fold them faster), a reduced input that is
// not row-major (eager gathers it as rows: another order), strided columns (no vector code),
// and, on 2 threads or more over more rows than one 2048-row chunk, a reduction whose Reduces
// each fold an input of their own as loaded (eager's work: eager splits the chunks across the
// threads): none of them launch. A plain reduction of computed values in fewer calls than
// threads splits its rows by chunks itself and launches.
TEST(JitColumnKernels, LayoutsEagerReducesAsRowsDoNotLaunch) {
  std::shared_ptr<jit::CompiledKernel> kernel =
      jit::cpu_target().compile(col_kernel(kFloat32, ExprOp::ReduceSum));
  launch_cols(*kernel, col_data(1, 100, 15, kFloat32, ExprOp::ReduceSum, 1, false), ones({15}),
              {true, true, false}, false);
  // The planner asks the sizes first (may_launch: before it makes the kernel's outputs).
  EXPECT_FALSE(kernel->may_launch({1, 100, 15}, 1, 1));
  EXPECT_TRUE(kernel->may_launch({1, 100, 16}, 1, 1));
  EXPECT_TRUE(kernel->may_launch({1, 100, 0}, 1, 1));  // nothing to compute: launches
  {
    LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
    k.stores = {k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, k.load(0), k.load(1)))};
    std::shared_ptr<jit::CompiledKernel> plain = jit::cpu_target().compile(k);
    for (int threads : {1, 2}) {
      ConfigOverride<int> t(config().num_threads, threads);
      for (int64_t rows : {2048, 2049}) {
        const Tensor x = col_data(1, rows, 64, kFloat32, ExprOp::ReduceSum, 4, false);
        const Tensor w = ones({64});
        // One call of 64 columns: on 2 threads its rows split by 2048-row chunks (a slot per
        // chunk, then the chunk tree), the same bits.
        EXPECT_TRUE(plain->may_launch({1, rows, 64}, 1, 1)) << rows;
        const std::vector<Tensor> got = launch_cols(*plain, x, w, {true}, true);
        expect_bitwise_equal(got[0], x.sum({1}, true), "plain column sum");
      }
    }
  }
  {
    // A Reduce of an input as it is loaded, on 2 threads over more than one chunk: eager's work
    // in eager's order, and eager splits the chunks across the threads, so it stays eager in
    // any number of calls; two Reduces of one load (one read where eager reads twice) launch.
    LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
    k.stores = {k.reduce(ExprOp::ReduceSum, k.load(0))};
    std::shared_ptr<jit::CompiledKernel> plain = jit::cpu_target().compile(k);
    LoopKernel k2 = LoopKernel::uniform(DType::Float32, 1);
    const int32_t x = k2.load(0);
    k2.stores = {k2.reduce(ExprOp::ReduceSum, x), k2.reduce(ExprOp::ReduceMax, x)};
    std::shared_ptr<jit::CompiledKernel> shared = jit::cpu_target().compile(k2);
    for (int threads : {1, 2}) {
      ConfigOverride<int> t(config().num_threads, threads);
      for (int64_t rows : {2048, 2049})
        for (int64_t cols : {64, 256, 4096}) {
          EXPECT_EQ(plain->may_launch({1, rows, cols}, 1, 1), threads < 2 || rows <= 2048)
              << rows << " x " << cols << " on " << threads;
          EXPECT_TRUE(shared->may_launch({1, rows, cols}, 1, 1))
              << rows << " x " << cols << " on " << threads;
        }
    }
  }
  // Rows 40 columns apart holding 20 columns: not row-major.
  const Tensor wide = col_data(1, 100, 40, kFloat32, ExprOp::ReduceSum, 2, false);
  launch_cols(*kernel, wide.narrow(2, 0, 20), ones({20}), {true, true, false}, false);
  // A transposed input: strided columns.
  const Tensor tr = col_data(1, 30, 30, kFloat32, ExprOp::ReduceSum, 3, false).transpose(1, 2);
  launch_cols(*kernel, tr, ones({30}), {true, true, false}, false);
}

// ---- through the recorder ----

using JitColumnPlanTest = testing::JitRecordedTest<>;

Tensor randn_of(std::vector<int64_t> shape, uint64_t seed, DType dt = kFloat32) {
  JitMode off(false);
  manual_seed(seed);
  return randn(IntList(shape), TensorOptions().dtype(dt));
}

// The words `word(plan, step)` gives for each step of the cached plans (empty: none), joined
// by spaces.
std::string words_of_steps(
    const std::function<std::string(const jit::JitPlan&, const jit::Step&)>& word) {
  std::string s;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    std::shared_ptr<tracer::RegionPlan> keep = r->jit_plan();
    const auto* p = dynamic_cast<const jit::JitPlan*>(keep.get());
    if (p == nullptr) continue;
    for (const jit::Step& st : p->steps())
      if (std::string w = word(*p, st); !w.empty()) s += (s.empty() ? "" : " ") + w;
  }
  return s;
}

// The plans' steps ("k2": a kernel of 2 nodes; "e": an eager step) after `program` ran with each
// input set in turn (one plan: the later sets are other sizes of the same region), bitwise equal
// to eager every run.
std::string plan_of(const std::function<TensorList(const TensorList&)>& program,
                    const std::vector<TensorList>& input_sets, const std::string& what) {
  for (const TensorList& in : input_sets) {
    TensorList want;
    {
      JitMode off(false);
      want = program(in);
    }
    for (int it = 0; it < 2; ++it) {
      JitMode on(true);
      TensorList got = program(in);
      kiln::sync();
      testing::expect_lists_bitwise_equal(got, want, what);
    }
  }
  return words_of_steps([](const jit::JitPlan&, const jit::Step& st) {
    return st.kernel ? fmt::format("k{}", st.kernel->nodes.size()) : std::string("e");
  });
}

// The ops of the cached plans' eager steps, in order ("permute copy").
std::string eager_step_ops() {
  return words_of_steps([](const jit::JitPlan& p, const jit::Step& st) {
    return st.kernel ? std::string() : std::string(op_name(p.graph().nodes[st.node].op));
  });
}

// The stored outputs of each kernel of the cached plans ("1 2": one, then two).
std::string stores_of_kernels() {
  return words_of_steps([](const jit::JitPlan&, const jit::Step& st) {
    return st.kernel ? std::to_string(st.kernel->outputs.size()) : std::string();
  });
}

// `(x * w).sum(0)`: one column kernel (the product is never stored), every ISA, both dtypes,
// 1 and 2 threads; one plan for batches around eager's 64-row runs and 2048-row chunks.
TEST_F(JitColumnPlanTest, WeightedColumnSumIsOneKernel) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (int threads : {1, 2}) {
        ConfigOverride<int> t(config().num_threads, threads);
        tracer::RegionCache::instance().clear();
        std::vector<TensorList> sets;
        for (int64_t n : {100, 64, 2049, 5})
          sets.push_back({randn_of({n, 37}, static_cast<uint64_t>(n), dt), randn_of({37}, 7, dt)});
        const std::string steps =
            plan_of([](const TensorList& in) { return TensorList{(in[0] * in[1]).sum({0})}; }, sets,
                    fmt::format("{} {} threads {}", isa, dtype_name(dt), threads));
        EXPECT_EQ(steps, "k2") << isa;
      }
    }
  }
}

// Column reductions of different inputs of one shape share a column kernel (planner.cpp: a
// float reduction with no kernel computing or reading its input joins the latest column kernel
// of its shape reducing the same dims, as rows do): `x.sum(0) + y.amax(0)` and a layer_norm's
// weight and bias gradients (forward and backward: the row kernel and one column kernel, three
// kernels before). An integer sum stays apart from a float one: the column renderer declines a
// kernel storing integer sums beside float loads, which would send the integer sum's nodes
// eager too (the launches count it). One plan for batches around 2048-row chunks, 1 and 2
// threads, every ISA, bitwise.
TEST_F(JitColumnPlanTest, ColumnReductionsOfOtherInputsShareOneColumnKernel) {
  std::atomic<int64_t>& launches = jit::cpu_jit_counters().column_launches;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (int threads : {1, 2}) {
      ConfigOverride<int> t(config().num_threads, threads);
      const std::string what = fmt::format("{} threads {}", isa, threads);
      std::vector<TensorList> sets;
      for (int64_t n : {100, 2049, 5})
        sets.push_back({randn_of({n, 37}, static_cast<uint64_t>(n) + 40),
                        randn_of({n, 37}, static_cast<uint64_t>(n) + 41), randn_of({37}, 42),
                        (randn_of({n, 37}, static_cast<uint64_t>(n) + 43) * 1e3).to(kInt32)});
      tracer::RegionCache::instance().clear();
      EXPECT_EQ(
          plan_of([](const TensorList& in) { return TensorList{in[0].sum({0}) + in[1].amax({0})}; },
                  sets, what + " two inputs"),
          "k3")
          << what;
      for (const TensorList& set : sets) {  // a region each (the gradient's 1 / N differs)
        tracer::RegionCache::instance().clear();
        const std::string ln = plan_of(
            [](const TensorList& in) {
              const Tensor xg = in[0].detach().requires_grad_();
              const Tensor wg = in[2].detach().requires_grad_();
              const Tensor bg = in[2].detach().requires_grad_();
              (layer_norm(xg, {37}, wg, bg) * in[1]).sum().backward();
              return TensorList{xg.grad(), wg.grad(), bg.grad()};
            },
            {set}, what + " layer_norm");
        EXPECT_EQ(std::count(ln.begin(), ln.end(), 'k'), 2) << what << ": " << ln;
        EXPECT_EQ(ln.find('e'), std::string::npos) << what << ": " << ln;
      }
      tracer::RegionCache::instance().clear();
      const int64_t before = launches.load();
      EXPECT_EQ(plan_of(
                    [](const TensorList& in) {
                      return TensorList{in[3].sum({0}), in[0].sum({0})};
                    },
                    {sets[0]}, what + " integer and float"),
                "k1 k1")
          << what;
      EXPECT_EQ(launches.load() - before, 4) << what;  // both kernels, on both runs
    }
  }
}

// A linear layer's bias gradient and batch-norm-style statistics: sums, means, extremes and
// products over the batch dims of 2-D and 3-D values, keepdim or not, with the row values
// computed in the kernel (`mean * 0.5`); the sizes change between recordings of one plan.
TEST_F(JitColumnPlanTest, ColumnStatisticsKeepdimOrNotAndRowValues) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    tracer::RegionCache::instance().clear();
    std::vector<TensorList> sets;
    for (int64_t n : {9, 130, 1})
      sets.push_back({randn_of({n, 3, 20}, static_cast<uint64_t>(n)) * 3.0,
                      randn_of({n, 20}, static_cast<uint64_t>(n) + 1, kFloat64)});
    const std::string steps = plan_of(
        [](const TensorList& in) {
          const Tensor& x = in[0];
          const Tensor& g = in[1];
          Tensor y = x * 0.5 + 1.0;
          return TensorList{g.sum({0}),        (g * g).mean({0}, true) * 0.5,
                            y.mean({0, 1}),    y.amax({1}, true),
                            (x * x).amin({0}), (y * 0.01 + 1.0).prod({0}, true)};
        },
        sets, isa + " statistics");
    // Each reduction is a column kernel with its prologue: no eager step.
    EXPECT_EQ(steps.find('e'), std::string::npos) << isa << ": " << steps;
  }
}

// Integer and Bool sums over columns (counts per class of a Bool mask) are Int64 column kernels,
// wrapping as eager's uint64 sum (exact in any order): Bool values, Int32 values (twice: a
// kernel of two sums; sums past 32 bits), Int64 values (near 2^62, so that the sums wrap),
// keepdim or not, a 3-D input over {0, 1}, every ISA, 1 and 2 threads; a comparison's flags of
// floats (declined by the column renderer: its nodes run eagerly, bitwise too); one plan
// run on batches of 100, 300, 5 and 2049 rows (around eager's 64-row runs and 2048-row chunks),
// bitwise equal to eager, each batch's runs through the plan's column kernels. Counting the
// flags as floats, adding the Int64 bits as doubles, or Int64 lanes on the 32-bit lanes' emitter
// (ColRenderer's accumulators in half registers, vpaddd) fails it.
TEST_F(JitColumnPlanTest, IntegerSumsOverColumnsAreColumnKernels) {
  const auto program = [](const TensorList& in) {
    return TensorList{(in[0] > in[1]).sum({0}), in[2].sum({0}, true), (in[2] * 3).sum({0}),
                      in[3].sum({0, 1}),        in[3].sum({0}),       in[4].sum({0})};
  };
  std::atomic<int64_t>& launches = jit::cpu_jit_counters().column_launches;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (int threads : {1, 2}) {
      ConfigOverride<int> t(config().num_threads, threads);
      tracer::RegionCache::instance().clear();
      std::string steps;
      for (int64_t n : {100, 300, 5, 2049}) {
        const std::string what = fmt::format("{} threads {} rows {}", isa, threads, n);
        const uint64_t sd = static_cast<uint64_t>(n);
        const TensorList set = {
            randn_of({n, 37}, sd), randn_of({n, 37}, sd + 1),
            (randn_of({n, 37}, sd + 2) * 5e7).to(kInt32),
            (randn_of({n, 3, 20}, sd + 3) * 1000.0).to(kInt64) + (int64_t{1} << 62),
            randn_of({n, 40}, sd + 4) > 0.0};
        const int64_t before = launches.load();
        steps = plan_of(program, {set}, what);  // the plan of the first set, run on this one
        // Four kernels on every run (the CPU plans before a region's first run): eager's reduction
        // instead only where it splits more than 2048 rows across the threads. The flags'
        // count, declined (column_kernel_ok: float loads), runs its nodes eagerly.
        if (threads == 1 || n <= 2048) {
          EXPECT_EQ(launches.load() - before, 8) << what;  // two runs
        }
      }
      // The flags' count; both Int32 sums in one kernel; the Int64 sums over {0, 1} and {0};
      // the Bool sum.
      EXPECT_EQ(steps, "k2 k3 k1 k1 k1") << isa << " threads " << threads;
    }
  }
}

// Values for argmax / argmin over columns: few distinct values (ties), +0 and -0, +-inf and NaNs
// (two in some columns), column 3 all -inf and column 5 all NaN (the first row wins both).
Tensor arg_values(int64_t n, int64_t c, uint64_t seed, DType dt) {
  Tensor x = (randn_of({n, c}, seed, kFloat64) * 2.0).round().to(dt);
  if (n == 0) return x;
  std::mt19937_64 rng(seed);
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {std::nan(""), inf, -inf, -0.0, 0.0};
  auto put = [&](int64_t i, double v) {
    if (dt == kFloat32)
      x.mutable_data_ptr<float>()[i] = static_cast<float>(v);
    else
      x.mutable_data_ptr<double>()[i] = v;
  };
  for (int64_t k = 0; k < n * c / 23 + 1; ++k)
    put(static_cast<int64_t>(rng() % static_cast<uint64_t>(n * c)), specials[rng() % 5]);
  for (int64_t r = 0; r < n; ++r) put(r * c + 3, -inf), put(r * c + 5, std::nan(""));
  return x;
}

// argmax / argmin over columns of computed values (ReduceArgMax / ReduceArgMin: one pass, a
// running row index per lane, render_cols.cpp): one column kernel, eager's run_arg_cols result
// (the first row of the extreme, NaN the extreme and the first NaN winning, +0 and -0 tied),
// bitwise: Float32 and Float64 values and an Int32 product over dim 1 of [4, n, 33], keepdim;
// every ISA, 1 and 2 threads; one plan for batches around eager's 64-row runs and 2048-row
// chunks (the kernel's levels combined), its column launches counted. An input's argmax as it
// is (declined: eager scans it faster in place) runs its node eagerly, with the same result.
TEST_F(JitColumnPlanTest, ArgmaxArgminOverColumnsAreOnePassColumnKernels) {
  const auto program = [](const TensorList& in) {
    return TensorList{(in[0] * in[1]).argmax(0), (in[0] + 1.0).argmin(0, true),
                      (in[2] * 3).argmax(1)};
  };
  const auto plain = [](const TensorList& in) {
    return TensorList{in[0].argmax(0), in[0].argmin(0, true)};
  };
  std::atomic<int64_t>& launches = jit::cpu_jit_counters().column_launches;
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (int threads : {1, 2}) {
        ConfigOverride<int> t(config().num_threads, threads);
        tracer::RegionCache::instance().clear();
        std::string steps;
        for (int64_t n : {100, 64, 65, 300, 2049, 4500}) {
          const std::string what = fmt::format("{} {} threads {} rows {}", isa, dt, threads, n);
          const uint64_t sd = static_cast<uint64_t>(n);
          Tensor w = arg_values(1, 40, sd + 7, dt).reshape({40}).abs() + 1.0;
          const TensorList set = {arg_values(n, 40, sd, dt), w,
                                  (randn_of({4, n, 33}, sd + 1) * 3.0).round().to(kInt32)};
          const int64_t before = launches.load();
          steps = plan_of(program, {set}, what);
          // Two kernels a run (the CPU plans before the first run); past 2048 rows on 2
          // threads the [n, 40] one splits its rows by chunks (each chunk's rows counted from
          // its first: RowsSplitAcrossThreadsByChunks).
          EXPECT_EQ(launches.load() - before, 4) << what;
          const int64_t plain_before = launches.load();
          plan_of(plain, {{set[0]}}, what + " plain");
          EXPECT_EQ(launches.load(), plain_before) << what;
        }
        // The two float reductions in one kernel, the Int32 one in another; the plain program's
        // two in one kernel, which declines every launch.
        EXPECT_EQ(steps, "k4 k2 k2") << fmt::format("{} {} threads {}", isa, dt, threads);
      }
    }
  }
}

// A consumer that broadcasts a column result back (`x - x.mean(0)`) joins the column kernel as
// its epilogue (a second pass over each block's rows); a reduction of the epilogue's values
// (the centered squares' mean) starts the next kernel, which divides by its sqrt in turn. The
// squares, read by that reduction only, are its prologue (not stored by the first kernel), and
// the centered values are computed again by the second kernel from x and the stored means
// (docs/jit.md "Recomputation"): the first kernel stores only the means, no epilogue pass.
TEST_F(JitColumnPlanTest, BroadcastBackIsAnEpilogue) {
  const Tensor x = randn_of({50, 40}, 3) * 2.0 + 1.0;
  const std::string steps = plan_of(
      [](const TensorList& in) {
        Tensor c = in[0] - in[0].mean({0}, true);
        return TensorList{c / (c * c).mean({0}, true).sqrt()};
      },
      {{x}}, "standardize columns");
  EXPECT_EQ(steps, "k2 k5") << steps;
  EXPECT_EQ(stores_of_kernels(), "1 1");
}

// var and std over columns (jit/passes/column_split.h): two column kernels, the column means and
// then the centered squares' sums with `x - mean` in the prologue (sqrt joining it), bitwise
// against eager's var for both corrections, keepdim or not, both dtypes, every ISA, an empty and
// a one-row batch (NaN), and a 3-D batch-norm shape over {0, 1}. A later batch of 8 columns
// reuses the plan: its kernels decline, the split nodes run eagerly (Mean with a correction),
// still eager var's bits.
TEST_F(JitColumnPlanTest, VarAndStdOverColumnsAreTwoColumnKernels) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (bool unbiased : {true, false}) {
        for (bool keepdim : {false, true}) {
          const std::string what =
              fmt::format("{} {} unbiased {} keepdim {}", isa, dt, unbiased, keepdim);
          tracer::RegionCache::instance().clear();
          std::vector<TensorList> sets;
          for (int64_t n : {50, 1, 0, 300})
            sets.push_back({randn_of({n, 40}, static_cast<uint64_t>(n), dt) * 3.0 + 1.0});
          sets.push_back({randn_of({50, 8}, 9, dt)});  // declined: eager steps
          const std::string steps = plan_of(
              [&](const TensorList& in) {
                return TensorList{in[0].var({0}, unbiased, keepdim),
                                  (in[0] * 0.5).std({0}, unbiased, keepdim)};
              },
              sets, what);
          // Two regions (the one-row batch's size-1 dim is in the region key), each three
          // kernels: var's means; var's centered squares with std's product and its means;
          // std's product again (recomputed, not stored), its centered squares and sqrt.
          EXPECT_EQ(steps, "k1 k5 k5 k1 k5 k5") << what;
        }
      }
    }
  }
  tracer::RegionCache::instance().clear();
  const std::string steps = plan_of(
      [](const TensorList& in) {
        const Tensor& x = in[0];
        Tensor mean = x.mean({0, 1}, true);
        return TensorList{(x - mean) / (x.var({0, 1}, false, true) + 1e-5).sqrt()};
      },
      {{randn_of({6, 30, 24}, 4) * 2.0}, {randn_of({3, 7, 24}, 5)}}, "batch norm");
  EXPECT_EQ(steps.find('e'), std::string::npos) << steps;
}

// logsumexp over columns (jit/passes/column_split.h): two column kernels, the column maxima
// (their shift computed in the epilogue), then the sums of exp(x - shift) with log(sum) + shift
// in the epilogue, bitwise against eager's logsumexp, keepdim or not, both dtypes, every ISA,
// an empty batch (-inf), a one-row batch, columns of -inf, of +inf and with a NaN, and a 3-D
// input over {0, 1}. A later batch of 8 columns reuses the plan: its kernels decline, the split
// nodes run eagerly (an amax that gives -inf over no rows), still eager logsumexp's bits.
// n rows of 40 columns (random, times 4) with special columns from 3 rows on: 0 all -inf,
// 1 with a +inf, 2 with a NaN, 3 with one -inf among finite values.
Tensor special_columns(int64_t n, DType dt, uint64_t seed) {
  Tensor x = randn_of({n, 40}, static_cast<uint64_t>(n) + seed, dt) * 4.0;
  if (n >= 3) {
    const double inf = std::numeric_limits<double>::infinity();
    x.select(1, 0).fill_(-inf);
    x.select(1, 1).select(0, 1).fill_(inf);
    x.select(1, 2).select(0, 2).fill_(std::numeric_limits<double>::quiet_NaN());
    x.select(1, 3).select(0, 0).fill_(-inf);
  }
  return x;
}

TEST_F(JitColumnPlanTest, LogsumexpOverColumnsIsTwoColumnKernels) {
  auto special = [](int64_t n, DType dt) { return special_columns(n, dt, 3); };
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (bool keepdim : {false, true}) {
        const std::string what = fmt::format("{} {} keepdim {}", isa, dt, keepdim);
        tracer::RegionCache::instance().clear();
        std::vector<TensorList> sets;
        for (int64_t n : {50, 0, 300, 1}) sets.push_back({special(n, dt)});
        sets.push_back({randn_of({50, 8}, 9, dt)});  // declined: eager steps
        const std::string steps = plan_of(
            [&](const TensorList& in) {
              return TensorList{(in[0] * 0.5 + 1.0).logsumexp(IntList{0}, keepdim)};
            },
            sets, what);
        // Two regions (the one-row batch's size-1 dim is in the region key). Over 50 rows: x *
        // 0.5 + 1, amax and the clamped shift; x * 0.5 + 1 again (recomputed, not stored: the
        // planner's recompute_element_chains), the sum of exp(x - shift) and its log; + shift,
        // a kernel of its own (a row value computes from its kernel's row values only:
        // loop_kernel.h); without keepdim, the squeeze (a view: an eager step). Over one row the
        // index space has the row shape: + shift joins the second kernel.
        EXPECT_EQ(steps, keepdim ? "k4 k6 k1 k4 k7" : "k4 k6 k1 e k4 k7 e") << what;
      }
    }
  }
  tracer::RegionCache::instance().clear();
  const std::string steps = plan_of(
      [](const TensorList& in) {
        return TensorList{in[0].logsumexp(IntList{0, 1})};
      },
      {{randn_of({6, 30, 24}, 4) * 2.0}, {randn_of({3, 7, 24}, 5)}}, "over {0, 1}");
  EXPECT_EQ(steps, "k2 k4 k1 e e") << steps;  // the two squeezes: views
}

// softmax and log_softmax over a dim that is not the last split into column kernels
// (jit/passes/column_split.h): eager's softmax_cols bits, every ISA, both dtypes, with columns
// of -inf, a +inf, a NaN and one -inf among finite values; batches around the 2048-row chunks
// on 2 threads (the rows split across threads by chunks), an empty one and a declined 8-column
// one (eager steps); over the channels of [N, C, H, W].
TEST_F(JitColumnPlanTest, SoftmaxOverColumnsIsColumnKernels) {
  auto special = [](int64_t n, DType dt) { return special_columns(n, dt, 5); };
  ConfigOverride<int> threads(config().num_threads, 2);
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (bool log : {false, true}) {
        const std::string what = fmt::format("{} {} log {}", isa, dt, log);
        tracer::RegionCache::instance().clear();
        std::vector<TensorList> sets;
        for (int64_t n : {50, 0, 300, 2049, 4100}) sets.push_back({special(n, dt)});
        sets.push_back({randn_of({50, 8}, 9, dt)});  // declined: eager steps
        const std::string steps = plan_of(
            [&](const TensorList& in) {
              const Tensor x = in[0] * 0.5 + 1.0;
              return TensorList{log ? log_softmax(x, 0) : softmax(x, 0)};
            },
            sets, what);
        // x * 0.5 + 1, its column maxima m and e = exp(x - m) in the epilogue pass (stored:
        // the planner recomputes no exp, and the final product reads e too); then the sums of
        // e, their reciprocals and e * r. With log: the maxima; x * 0.5 + 1 again (recomputed,
        // not stored), the sums of exp(x - m) and their log; m + log(s), a kernel of its own (m
        // is the first kernel's row value); x - that, recomputing x * 0.5 + 1 once more.
        EXPECT_EQ(steps, log ? "k3 k6 k1 k3" : "k5 k3") << what;
      }
    }
  }
  tracer::RegionCache::instance().clear();
  const std::string steps =
      plan_of([](const TensorList& in) { return TensorList{softmax(in[0] * 2.0, 1)}; },
              {{randn_of({2, 6, 5, 7}, 4)}, {randn_of({3, 6, 9, 8}, 5)}}, "channels");
  EXPECT_EQ(steps, "k4 k3") << steps;  // x * 2, the maxima and e; the sums, 1 / s and e * r
}

// A cheap element chain that a first column kernel computes and a second reads is computed again
// by the second (the planner's recompute_element_chains), not stored: `(x * 2 + 1).var(0)`
// stores only the means. Stored still: a chain that is also a graph output, one with a
// transcendental function (exp costs about what the memory pass saves), and one whose second
// kernel would load more inputs than the stored value. Bitwise, every ISA.
TEST_F(JitColumnPlanTest, CheapProloguesAreRecomputedNotStored) {
  struct Case {
    std::string what, steps, stores;
    std::function<TensorList(const TensorList&)> program;
  };
  const std::vector<Case> cases = {
      {"cheap", "k3 k5", "1 1",
       [](const TensorList& in) { return TensorList{(in[0] * 2.0 + 1.0).var({0})}; }},
      {"an output too", "k3 k3", "2 1",
       [](const TensorList& in) {
         Tensor v = in[0] * 2.0 + 1.0;
         return TensorList{v.var({0}), v};
       }},
      {"transcendental", "k2 k3", "2 1",
       [](const TensorList& in) { return TensorList{in[0].exp().var({0})}; }},
      {"three inputs", "k3 k3", "2 1",  // not recomputed: two more streams to load
       [](const TensorList& in) { return TensorList{(in[0] + in[1] + in[2]).var({0})}; }},
  };
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (const Case& c : cases) {
      tracer::RegionCache::instance().clear();
      const std::string steps =
          plan_of(c.program,
                  {{randn_of({70, 40}, 3), randn_of({70, 40}, 5), randn_of({70, 40}, 6)},
                   {randn_of({300, 40}, 4), randn_of({300, 40}, 7), randn_of({300, 40}, 8)}},
                  c.what);
      EXPECT_EQ(steps, c.steps) << isa << " " << c.what;
      EXPECT_EQ(stores_of_kernels(), c.stores) << isa << " " << c.what;
    }
  }
}

// Amax and Amin with attrs.ints[1] (set only by the column logsumexp split) give the identity
// over no elements, eagerly, where the API's amax raises; with elements, the same as without.
TEST(ReduceExtremeOfNothing, GivesTheIdentityWhereAsked) {
  for (DType dt : {kFloat32, kFloat64, kInt32}) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{0, 33}, {20, 33}}) {
      const Tensor x = (randn_of(shape, 3) * 10.0).to(dt);
      for (OpId op : {OpId::Amax, OpId::Amin}) {
        Attrs a;
        a.dims = {0};
        a.ints[1] = 1;
        const Tensor in[] = {x};
        const Tensor got = dispatch(op, in, a).to(kFloat64);
        const std::string what = fmt::format("{} {} {}", op_name(op), dt, shape[0]);
        if (shape[0] > 0) {
          const Tensor want = (op == OpId::Amax ? x.amax({0}) : x.amin({0})).to(kFloat64);
          EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << what;
          continue;
        }
        const double inf = std::numeric_limits<double>::infinity();
        const double id = is_floating(dt)    ? (op == OpId::Amax ? -inf : inf)
                          : op == OpId::Amax ? double(std::numeric_limits<int32_t>::lowest())
                                             : double(std::numeric_limits<int32_t>::max());
        for (double v : got.to_vector<double>()) EXPECT_EQ(v, id) << what;
        EXPECT_THROW(x.amax({0}), Error) << what;  // the API's amax still raises
      }
    }
  }
}

// Where eager's plan puts the reduced dims (ops/cpu/reduce_plan.h reduced_run), size-1 dims
// dropped: the classification both eager's layouts and the gathered reductions rest on.
TEST(ReducedRun, ClassifiesTheDimsOfSizeOtherThanOne) {
  using R = ReducedRun;
  EXPECT_EQ(reduced_run({4, 5, 6}, 0b000), R::None);
  EXPECT_EQ(reduced_run({4, 1, 6}, 0b010), R::None);
  EXPECT_EQ(reduced_run({4, 5, 6}, 0b110), R::Last);
  EXPECT_EQ(reduced_run({4, 5, 1}, 0b010), R::Last);
  EXPECT_EQ(reduced_run({4, 5, 6}, 0b011), R::BlockThenKept);
  EXPECT_EQ(reduced_run({4, 5, 1}, 0b101), R::BlockThenKept);  // [N, C, 1] over {0, 2}
  EXPECT_EQ(reduced_run({4, 5, 6}, 0b101), R::Scattered);
  EXPECT_EQ(reduced_run({4, 5, 6, 7}, 0b1101), R::Scattered);      // NCHW over {0, 2, 3}
  EXPECT_EQ(reduced_run({1, 5, 6, 7}, 0b1101), R::Last);           // [1, C, H, W]: rows in place
  EXPECT_EQ(reduced_run({4, 5, 1, 1}, 0b1101), R::BlockThenKept);  // [N, C, 1, 1]: columns
}

// Mean's correction (attrs.ints[1], set only by the column var split): sum / (n - correction),
// NaN over no elements, eagerly, over rows and over columns.
TEST(ReduceMeanCorrection, DividesByTheCountLessTheCorrection) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{20, 33}, {0, 33}, {1, 33}}) {
    const Tensor x = randn_of(shape, 3);
    for (int64_t dim : {0, 1}) {
      Attrs a;
      a.dims = {dim};
      a.ints[0] = 0;
      a.ints[1] = 1;
      const Tensor in[] = {x};
      const Tensor got = dispatch(OpId::Mean, in, a);
      const int64_t n = shape[static_cast<size_t>(dim)];
      const std::vector<float> sums = x.sum({dim}).to_vector<float>(), g = got.to_vector<float>();
      ASSERT_EQ(g.size(), sums.size());
      for (size_t i = 0; i < g.size(); ++i) {
        if (n == 0)
          EXPECT_TRUE(std::isnan(g[i])) << "dim " << dim << " element " << i;
        else
          EXPECT_EQ(g[i], sums[i] / static_cast<float>(n - 1)) << "dim " << dim << " element " << i;
      }
    }
  }
}

// Element outputs of 8 MiB and more whose vectors all start aligned take non-temporal stores
// (640 columns: rows of 2560 bytes); 630 columns do not. Both bitwise, 1 and 2 threads.
TEST_F(JitColumnPlanTest, LargeEpilogueOutputsStreamBitwise) {
  for (int64_t c : {640, 630}) {
    for (int threads : {1, 2}) {
      ConfigOverride<int> t(config().num_threads, threads);
      tracer::RegionCache::instance().clear();
      const Tensor x = randn_of({4200, c}, static_cast<uint64_t>(c));
      const std::string steps = plan_of(
          [](const TensorList& in) { return TensorList{(in[0] - in[0].mean({0}, true)) * 2.0}; },
          {{x}}, fmt::format("large epilogue {} threads {}", c, threads));
      EXPECT_EQ(steps, "k3") << steps;
    }
  }
}

// Reductions eager computes as gathered rows (jit/passes/gathered_rows.h): batch-norm statistics
// over {0, 2, 3} of [N, C, H, W] and sums, extremes, products and logsumexps over {0, 2} of
// [A, B, C] are a copy kernel (the prologue fused into the gather) and a row kernel, no eager
// step, bitwise against eager on every ISA, both dtypes (and an Int32 sum), keepdim or not,
// one plan for sizes that change between runs (a row of 2 elements to rows past a 65536-element
// chunk). Reversing the order of the reduced dims in the copy fails it.
TEST_F(JitColumnPlanTest, GatheredRowReductionsAreCopyAndRowKernels) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      tracer::RegionCache::instance().clear();
      std::vector<TensorList> sets;
      for (auto [n, h, w] : {std::array<int64_t, 3>{4, 5, 6}, {9, 3, 2}, {2, 181, 190}})
        sets.push_back({randn_of({n, 3, h, w}, static_cast<uint64_t>(n * h), dt) * 2.0 + 0.5,
                        randn_of({1, 3, 1, 1}, 11, dt), randn_of({n, 7, 2 * h}, 12, dt)});
      const std::string what = fmt::format("{} {}", isa, dtype_name(dt));
      const std::string steps = plan_of(
          [](const TensorList& in) {
            const Tensor y = in[0] * in[1] + 1.0;
            const Tensor& z = in[2];
            return TensorList{y.mean({0, 2, 3}, true),
                              y.var({0, 2, 3}, false, true),
                              y.var({0, 2, 3}),
                              (z * 3.0).sum({0, 2}),
                              z.amax({0, 2}, true),
                              z.amin({2, 0}),
                              (z * 0.01 + 1.0).prod({0, 2}),
                              z.logsumexp(IntList{0, 2}, true),
                              (z * 100.0).to(kInt32).sum({0, 2})};
          },
          sets, what);
      // y's gather (its producers at the gathered indices), mean and both vars in one row kernel
      // (three views, six unsqueezes); z's three products and the cast gathered in one kernel;
      // its sum; z's plain copy (eager's gather) for amax, amin and logsumexp in one row kernel
      // with the prod and the Int32 sum of the other gathered copies beside them (a row
      // reduction of another input joins the latest row kernel of its shape; four unsqueezes).
      // No reduction is an eager step.
      EXPECT_EQ(steps, "e e e k2 k3 e e e e e e k5 k1 e k5 e e e e") << what;
      EXPECT_EQ(eager_step_ops(),
                "permute permute permute unsqueeze unsqueeze unsqueeze unsqueeze unsqueeze "
                "unsqueeze copy unsqueeze unsqueeze unsqueeze unsqueeze")
          << what;
    }
  }
}

// A leaf reduced over a scattered dim set by one node stays that node (eager's gather and
// reduction: the split's copy would be an eager step too, with non-temporal stores that its
// kernel then reads from memory, jit/passes/gathered_rows.cpp); two reductions of it share one
// copy and one row kernel.
TEST_F(JitColumnPlanTest, ALeafReducedOnceKeepsEagersGather) {
  const Tensor x = randn_of({4, 3, 5, 6}, 31);
  // One eager node: no plan at all (the region is interpreted); split, it was `e e k1`.
  EXPECT_EQ(plan_of(
                [](const TensorList& in) {
                  return TensorList{in[0].mean({0, 2, 3})};
                },
                {{x}}, "one"),
            "");
  tracer::RegionCache::instance().clear();
  const std::string steps = plan_of(
      [](const TensorList& in) {
        return TensorList{in[0].mean({0, 2, 3}), in[0].var({0, 2, 3})};
      },
      {{x}}, "two");
  EXPECT_EQ(eager_step_ops(), "permute copy") << steps;
}

// Where dropping the size-1 dims leaves eager a row in place or columns ([N, C, 1, 1] over {0,
// 2, 3}; [1, C, H, W] over {0, 2, 3}) the reduction is not gathered (no permute or copy: the
// reduction stays one eager step): still eager's bits.
TEST_F(JitColumnPlanTest, SizeOneDimsKeepEagersClassification) {
  const Tensor cols = randn_of({40, 24, 1, 1}, 21), rows = randn_of({1, 5, 30, 7}, 22);
  plan_of(
      [](const TensorList& in) {
        return TensorList{(in[0] * 2.0).sum({0, 2, 3})};
      },
      {{cols}}, "columns");
  EXPECT_EQ(eager_step_ops(), "sum");
  tracer::RegionCache::instance().clear();
  plan_of(
      [](const TensorList& in) {
        return TensorList{(in[0] * 2.0).mean({0, 2, 3}, true)};
      },
      {{rows}}, "rows");
  EXPECT_EQ(eager_step_ops(), "mean");
}

// What stays eager or runs eagerly at launch, still bitwise: fewer than 16 columns (eager's
// column windows are faster), a reduced leaf that is not row-major (transposed or narrowed:
// eager gathers it), var and logsumexp over 50 columns (two kernels each since the split), a
// logsumexp of a transposed leaf (not split), reductions over dims that are not one block (a
// copy kernel and a row kernel since 2026-11-29: GatheredRowReductionsAreCopyAndRowKernels).
TEST_F(JitColumnPlanTest, WhatEagerReducesAsRowsStillMatches) {
  const Tensor x = randn_of({30, 12}, 5), wide = randn_of({30, 50}, 6),
               c3 = randn_of({6, 7, 20}, 8);
  const std::vector<std::function<Tensor()>> programs = {
      [&] { return (x * 2.0).sum({0}); },
      [&] { return wide.t().sum({0}); },
      [&] { return wide.narrow(1, 0, 20).sum({0}); },
      [&] { return (wide + 1.0).var({0}); },
      [&] { return (wide + 1.0).logsumexp(IntList{0}); },
      [&] { return wide.t().logsumexp(IntList{1}); },
      [&] {
        return (c3 * 2.0).sum({0, 2});
      },
  };
  for (size_t p = 0; p < programs.size(); ++p) {
    tracer::RegionCache::instance().clear();
    plan_of([&](const TensorList&) { return TensorList{programs[p]()}; }, {{}},
            "program " + std::to_string(p));
  }
}

}  // namespace
}  // namespace kiln
