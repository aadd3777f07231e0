// The baseline tier of CPU row and column kernels (jit/cpu/baseline_row_kernel.h,
// baseline_column_kernel.h, baseline_cut.h, jit/loop/row_fold.h): a new reduction kernel
// launches code made of pointwise baseline parts and folds in plain C++, its own rendering
// follows on the planning thread. Checked here: the baseline code gives the rendered kernel's
// bits (rows: softmax, layer norm with its statistics, a cross-entropy's fused kernel, max / min
// / prod with NaNs and signed zeros, argmax's ReduceFirst, row loads, params and RowSize;
// columns: every op, Int64 sums of masks, argmax / argmin, an epilogue, RowSize; Float32 and
// Float64, lengths around every piece, lane, tile and block boundary, on every ISA path), the
// swap to the rendering, and the launches it leaves to the rendering (rows longer than a chunk,
// launches too large to pay). Every row and column kernel test runs under KILN_JIT_BASELINE=only
// in ctest too (kiln.jit_baseline.kernels, tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/baseline_row_kernel.h"
#include "jit/cpu/cpu_kernel.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/op_kernels.h"
#include "jit/loop/row_program.h"
#include "jit_kernel_util.h"
#include "planning_thread_hold.h"
#include "progressive_launch.h"
#include "tracer/region_runner.h"

namespace kiln::jit {
namespace {

using kiln::testing::ConfigOverride;
using kiln::testing::supported_jit_isas;

// How an operand lies over the [rows, n] index space.
enum class Lie {
  Elements,  // [rows, n], rows `pad` elements apart beyond n
  RowValue,  // [rows, 1]: broadcast along the row (a row output, a row load)
  Shared,    // [1, n]: one row for every row (a layer norm's weight)
};

struct Buffer {
  DType type;
  Lie lie;
  std::vector<uint8_t> bytes;
};

// Values with the specials a fold's order shows: signed zeros, a NaN now and then (`nan`),
// sums whose rounding depends on the order, and (Int32 / Int64 / Bool) small labels.
void fill(Buffer& b, uint64_t seed, bool nan) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  const size_t es = itemsize(b.type);
  const size_t count = b.bytes.size() / es;
  for (size_t i = 0; i < count; ++i) {
    double v = g(rng) * 8.0;
    const auto u = rng() % 16;
    if (u == 0) v = 0.0;
    if (u == 1) v = -0.0;
    if (nan && rng() % 97 == 0) v = std::numeric_limits<double>::quiet_NaN();
    uint8_t* at = b.bytes.data() + i * es;
    switch (b.type) {
      case DType::Bool:
        testing::store_value(b.type, static_cast<double>(rng() % 2), at);
        break;
      case DType::Int32:
      case DType::Int64:
        testing::store_value(b.type, static_cast<double>(rng() % 5), at);
        break;
      default:
        testing::store_value(b.type, v, at);
    }
  }
}

constexpr int64_t kPad = 3;

std::vector<Buffer> buffers(const LoopKernel& k, const std::vector<Lie>& lies, int64_t rows,
                            int64_t n, uint64_t seed, bool nan) {
  std::vector<Buffer> out;
  for (int32_t j = 0; j < k.num_operands(); ++j) {
    Buffer b{k.operand_dtype(j), lies[static_cast<size_t>(j)], {}};
    const int64_t count = b.lie == Lie::Elements   ? rows * (n + kPad)
                          : b.lie == Lie::RowValue ? rows
                                                   : n;
    b.bytes.assign(static_cast<size_t>(std::max<int64_t>(count, 1)) * itemsize(b.type), 0);
    if (j >= k.num_outputs()) fill(b, seed + static_cast<uint64_t>(j) * 7919u, nan);
    out.push_back(std::move(b));
  }
  return out;
}

// The buffers of a column launch of n rows by w columns (the lies' shapes above).
std::vector<Buffer> column_buffers(const LoopKernel& k, const std::vector<Lie>& lies, int64_t n,
                                   int64_t w, uint64_t seed, bool nan) {
  std::vector<Buffer> out;
  for (int32_t j = 0; j < k.num_operands(); ++j) {
    Buffer b{k.operand_dtype(j), lies[static_cast<size_t>(j)], {}};
    const int64_t count = b.lie == Lie::Elements ? n * w : b.lie == Lie::RowValue ? w : n;
    b.bytes.assign(static_cast<size_t>(std::max<int64_t>(count, 1)) * itemsize(b.type), 0);
    if (j >= k.num_outputs()) fill(b, seed + static_cast<uint64_t>(j) * 7919u, nan);
    out.push_back(std::move(b));
  }
  return out;
}

void launch_columns(CompiledKernel& kernel, std::vector<Buffer>& ops, int64_t n, int64_t w,
                    const std::vector<Scalar>& params) {
  LaunchArgs la;
  la.sizes = {n, w};
  la.reduced_dims = 1;
  la.inner_dims = 1;
  for (Buffer& b : ops) {
    const auto es = static_cast<int64_t>(itemsize(b.type));
    la.ptrs.push_back(reinterpret_cast<char*>(b.bytes.data()));
    la.strides.push_back(b.lie == Lie::Elements   ? DimVector{w * es, es}
                         : b.lie == Lie::RowValue ? DimVector{0, es}
                                                  : DimVector{es, 0});
  }
  la.params = std::span<const Scalar>(params.data(), params.size());
  ASSERT_TRUE(kernel.can_launch(la));
  kernel.launch(la);
}

void launch(CompiledKernel& kernel, std::vector<Buffer>& ops, int64_t rows, int64_t n,
            const std::vector<Scalar>& params) {
  LaunchArgs la;
  la.sizes = {rows, n};
  la.reduced_dims = 1;
  for (Buffer& b : ops) {
    const auto es = static_cast<int64_t>(itemsize(b.type));
    la.ptrs.push_back(reinterpret_cast<char*>(b.bytes.data()));
    la.strides.push_back(b.lie == Lie::Elements   ? DimVector{(n + kPad) * es, es}
                         : b.lie == Lie::RowValue ? DimVector{es, 0}
                                                  : DimVector{0, es});
  }
  la.params = std::span<const Scalar>(params.data(), params.size());
  kernel.launch(la);
}

std::vector<InnerLayout> row_layout(const LoopKernel& k) {
  std::vector<InnerLayout> l(static_cast<size_t>(k.num_operands()), InnerLayout::Contiguous);
  const std::vector<uint8_t> row = k.row_values();
  for (int32_t j = 0; j < k.num_operands(); ++j) {
    const bool row_value = j < k.num_outputs()
                               ? row[static_cast<size_t>(k.stores[static_cast<size_t>(j)])] != 0
                               : false;
    if (row_value) l[static_cast<size_t>(j)] = InnerLayout::Broadcast;
  }
  return l;
}

// The row kernel's baseline code and its rendering over the same inputs give the same bytes.
void expect_row_baseline_bits(const LoopKernel& k, const std::vector<Lie>& lies,
                              const std::string& isa, const std::string& what,
                              const std::vector<Scalar>& params = {}) {
  ConfigOverride<std::string> isa_override(config().jit_isa, isa);
  std::shared_ptr<CompiledKernel> rendered, baseline;
  {
    ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
    rendered = cpu_target().compile(k);
  }
  forget_cpu_kernels();
  ConfigOverride<BaselineTier> only(config().jit_baseline, BaselineTier::Only);
  (void)cpu_target().compile(k);  // queues the op kernels it misses
  tracer::wait_for_compiles();
  baseline = cpu_target().compile(k);
  auto* cpu = dynamic_cast<CpuKernel*>(baseline.get());
  ASSERT_NE(cpu, nullptr);
  ASSERT_TRUE(cpu->runs_baseline(row_layout(k))) << what << "\n" << to_text(k);
  const int64_t lengths[] = {1,   2,   7,   8,   9,   15,   16,   17,   31,  33,
                             100, 128, 129, 136, 257, 1000, 1024, 1031, 4099};
  uint64_t seed = 11;
  for (int64_t n : lengths)
    for (int64_t rows : {1, 3, 37}) {
      if (rows * n > 60000) continue;
      for (bool nan : {false, true}) {
        std::vector<Buffer> a = buffers(k, lies, rows, n, ++seed, nan);
        std::vector<Buffer> b = a;
        const int64_t launches = cpu_jit_counters().baseline_launches.load();
        launch(*baseline, a, rows, n, params);
        EXPECT_GT(cpu_jit_counters().baseline_launches.load(), launches) << what << " n=" << n;
        launch(*rendered, b, rows, n, params);
        for (int32_t j = 0; j < k.num_outputs(); ++j)
          EXPECT_EQ(a[static_cast<size_t>(j)].bytes, b[static_cast<size_t>(j)].bytes)
              << what << " on " << isa << ": output " << j << " differs at [" << rows << ", " << n
              << "]" << (nan ? " with NaNs" : "") << "\n"
              << to_text(k);
      }
    }
}

// The same for a column kernel (compiled as one: the planner's hint).
void expect_column_baseline_bits(const LoopKernel& k, const std::vector<Lie>& lies,
                                 const std::string& isa, const std::string& what,
                                 const std::vector<Scalar>& params = {}) {
  ConfigOverride<std::string> isa_override(config().jit_isa, isa);
  CpuLaunchHint hint;
  hint.columns = true;
  std::shared_ptr<CompiledKernel> rendered, baseline;
  {
    ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
    rendered = cpu_target().compile(k, hint);
  }
  forget_cpu_kernels();
  ConfigOverride<BaselineTier> only(config().jit_baseline, BaselineTier::Only);
  baseline = cpu_target().compile(k, hint);
  auto* cpu = dynamic_cast<CpuKernel*>(baseline.get());
  ASSERT_NE(cpu, nullptr);
  std::vector<InnerLayout> layout(static_cast<size_t>(k.num_operands()), InnerLayout::Contiguous);
  for (size_t j = 0; j < lies.size(); ++j)
    if (lies[j] == Lie::Shared) layout[j] = InnerLayout::Broadcast;
  ASSERT_TRUE(cpu->runs_baseline(layout, true)) << what << "\n" << to_text(k);
  uint64_t seed = 23;
  for (int64_t n : {1, 2, 63, 64, 65, 129, 300, 2048, 2049})
    for (int64_t w : {16, 17, 100, 257, 600}) {
      if (n * w > 80000) continue;
      for (bool nan : {false, true}) {
        std::vector<Buffer> a = column_buffers(k, lies, n, w, ++seed, nan);
        std::vector<Buffer> b = a;
        const int64_t launches = cpu_jit_counters().baseline_launches.load();
        launch_columns(*baseline, a, n, w, params);
        // (Past a chunk of rows on few calls the rows split across threads: rendered.)
        if (n <= kColRowChunk) {
          EXPECT_GT(cpu_jit_counters().baseline_launches.load(), launches) << what << " n=" << n;
        }
        launch_columns(*rendered, b, n, w, params);
        for (int32_t j = 0; j < k.num_outputs(); ++j)
          EXPECT_EQ(a[static_cast<size_t>(j)].bytes, b[static_cast<size_t>(j)].bytes)
              << what << " on " << isa << ": output " << j << " differs at [" << n << ", " << w
              << "]" << (nan ? " with NaNs" : "") << "\n"
              << to_text(k);
      }
    }
}

LoopKernel softmax(DType t) {
  LoopKernel k = LoopKernel::uniform(t, 1);
  const int32_t x = k.load(0);
  const int32_t m = k.reduce(ExprOp::ReduceMax, x);
  const int32_t e = k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, m));
  k.stores = {k.binary(ExprOp::Div, e, k.reduce(ExprOp::ReduceSum, e))};
  return k;
}

TEST(JitBaselineRows, GivesTheRenderedRowKernelsBits) {
  for (const std::string& isa : supported_jit_isas()) {
    for (DType t : {DType::Float32, DType::Float64})
      expect_row_baseline_bits(softmax(t), {Lie::Elements, Lie::Elements}, isa,
                               fmt::format("softmax {}", dtype_name(t)));
    {  // layer norm with its weight and bias, its mean and variance stored as row values
      LoopKernel k = LoopKernel::uniform(DType::Float32, 3);
      const int32_t x = k.load(0);
      const int32_t size = k.row_size(DType::Float32);
      const int32_t mean = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), size);
      const int32_t d = k.binary(ExprOp::Sub, x, mean);
      const int32_t var =
          k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, d, d)),
                   k.row_size(DType::Float32, -1));
      const int32_t rstd =
          k.unary(ExprOp::Rsqrt, k.binary(ExprOp::Add, var, k.constant(1e-5, DType::Float32)));
      const int32_t y = k.binary(
          ExprOp::Add, k.binary(ExprOp::Mul, k.binary(ExprOp::Mul, d, rstd), k.load(1)), k.load(2));
      k.stores = {y, mean, rstd};
      expect_row_baseline_bits(
          k, {Lie::Elements, Lie::RowValue, Lie::RowValue, Lie::Elements, Lie::Shared, Lie::Shared},
          isa, "layer norm");
    }
    {  // a cross-entropy's fused forward and backward (kiln-perf xent's kernel): labels, a
       // Bool mask input, a masked sum, log-sum-exp, a row load
      LoopKernel k;
      k.inputs = {DType::Float32, DType::Float32, DType::Int32,   DType::Int32,
                  DType::Float32, DType::Bool,    DType::Float32, DType::Float32};
      const int32_t half = k.constant(0.5, DType::Float32);
      const int32_t z = k.binary(ExprOp::Add, k.binary(ExprOp::Mul, k.load(0), half), k.load(1));
      const int32_t hit = k.binary(ExprOp::Eq, k.load(2), k.load(3));
      const int32_t picked = k.select(hit, z, k.constant(0.0, DType::Float32));
      const int32_t m = k.reduce(ExprOp::ReduceMax, z);
      const int32_t e = k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, z, m));
      const int32_t s = k.reduce(ExprOp::ReduceSum, e);
      const int32_t lse = k.binary(ExprOp::Add, m, k.unary(ExprOp::Log, s));
      const int32_t loss = k.binary(ExprOp::Sub, lse, k.reduce(ExprOp::ReduceSum, picked));
      const int32_t p =
          k.binary(ExprOp::Mul, e, k.binary(ExprOp::Div, k.constant(1.0, DType::Float32), s));
      const int32_t g =
          k.binary(ExprOp::Mul, k.binary(ExprOp::Sub, p, k.cast(hit, DType::Float32)), k.load(4));
      const int32_t scaled = k.binary(ExprOp::Mul, k.select(k.load(5), g, k.load(6)), half);
      k.stores = {k.binary(ExprOp::Div, loss, k.load_row(7)), scaled};
      expect_row_baseline_bits(
          k,
          {Lie::RowValue, Lie::Elements, Lie::Elements, Lie::Elements, Lie::Elements, Lie::Elements,
           Lie::Elements, Lie::Elements, Lie::Elements, Lie::RowValue},
          isa, "cross-entropy");
    }
    for (DType t : {DType::Float32, DType::Float64}) {  // min, prod, a param, argmax
      LoopKernel k = LoopKernel::uniform(t, 1, 1);
      const int32_t x = k.load(0);
      const int32_t mx = k.reduce(ExprOp::ReduceMax, x);
      const int32_t at_max =
          k.binary(ExprOp::Or, k.binary(ExprOp::Eq, x, mx), k.binary(ExprOp::Ne, x, x));
      const int32_t first = k.reduce_first(k.cast(at_max, t));
      const int32_t mn = k.reduce(ExprOp::ReduceMin, k.binary(ExprOp::Mul, x, k.param(0)));
      const int32_t pr = k.reduce(ExprOp::ReduceProd,
                                  k.binary(ExprOp::Add, k.constant(1.0, t),
                                           k.binary(ExprOp::Mul, x, k.constant(0.0078125, t))));
      k.stores = {first, mn, k.binary(ExprOp::Sub, pr, mx), k.binary(ExprOp::Sub, x, mn)};
      expect_row_baseline_bits(
          k, {Lie::RowValue, Lie::RowValue, Lie::RowValue, Lie::Elements, Lie::Elements}, isa,
          fmt::format("argmax, min, prod {}", dtype_name(t)), {Scalar(-0.75)});
    }
    for (DType t : {DType::Float32, DType::Float64}) {
      // NaNs of two kinds meeting in a fold: the inputs' (positive) and the default NaN that
      // inf - inf and 0 * inf make (negative): which one a sum or product keeps depends on the
      // operands' order (x86: the first operand's), so the fold must keep the rendered order.
      LoopKernel k = LoopKernel::uniform(t, 1);
      const int32_t x = k.load(0);
      const int32_t big =
          k.binary(ExprOp::Mul, x, k.constant(t == DType::Float32 ? 1e38 : 1e307, t));
      k.stores = {k.reduce(ExprOp::ReduceSum, big),
                  k.reduce(ExprOp::ReduceProd, k.binary(ExprOp::Mul, big, x))};
      expect_row_baseline_bits(k, {Lie::RowValue, Lie::RowValue, Lie::Elements}, isa,
                               fmt::format("default NaNs {}", dtype_name(t)));
    }
    {  // plain sums: of a row shared by every row (folded where it lies), and of an input
       // broadcast along the row (through the row buffer)
      LoopKernel k = LoopKernel::uniform(DType::Float32, 3);
      const int32_t s = k.reduce(ExprOp::ReduceSum, k.load(1));
      const int32_t b = k.reduce(ExprOp::ReduceSum, k.load(2));
      k.stores = {s, b, k.binary(ExprOp::Add, k.load(0), s)};
      expect_row_baseline_bits(
          k,
          {Lie::RowValue, Lie::RowValue, Lie::Elements, Lie::Elements, Lie::Shared, Lie::RowValue},
          isa, "plain sums");
    }
  }
}

TEST(JitBaselineColumns, GivesTheRenderedColumnKernelsBits) {
  for (const std::string& isa : supported_jit_isas()) {
    for (DType t : {DType::Float32, DType::Float64}) {
      for (ExprOp op :
           {ExprOp::ReduceSum, ExprOp::ReduceProd, ExprOp::ReduceMax, ExprOp::ReduceMin}) {
        // reduce(x), reduce((x - c)^2) with c per column, x - reduce(x) (an epilogue), the mean
        LoopKernel k = LoopKernel::uniform(t, 2);
        const int32_t x = k.load(0), c = k.load(1);
        const int32_t r = k.reduce(op, x);
        const int32_t d = k.binary(ExprOp::Sub, x, c);
        const int32_t mean = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(t));
        k.stores = {r, k.reduce(op, k.binary(ExprOp::Mul, d, d)), k.binary(ExprOp::Sub, x, r),
                    mean};
        expect_column_baseline_bits(k,
                                    {Lie::RowValue, Lie::RowValue, Lie::Elements, Lie::RowValue,
                                     Lie::Elements, Lie::RowValue},
                                    isa, fmt::format("{} {}", expr_op_name(op), dtype_name(t)));
      }
    }
    {  // argmax and argmin of computed Float64 values, a per-row scale, a param
      LoopKernel k;
      k.inputs = {DType::Float64, DType::Float64};
      k.params = {DType::Float64};
      const int32_t v =
          k.binary(ExprOp::Add, k.binary(ExprOp::Mul, k.load(0), k.load(1)), k.param(0));
      k.stores = {k.reduce_arg(ExprOp::ReduceArgMax, v), k.reduce_arg(ExprOp::ReduceArgMin, v)};
      expect_column_baseline_bits(k, {Lie::RowValue, Lie::RowValue, Lie::Elements, Lie::Shared},
                                  isa, "argmax, argmin", {Scalar(0.25)});
    }
    {  // Int64 counts of a mask and of integers (wrapping sums), elements stored beside them
      LoopKernel k;
      k.inputs = {DType::Bool, DType::Int32};
      const int32_t m = k.load(0), i = k.load(1);
      k.stores = {k.reduce(ExprOp::ReduceSum, k.cast(m, DType::Int64)),
                  k.reduce(ExprOp::ReduceSum, k.cast(i, DType::Int64)),
                  k.binary(ExprOp::Mul, i, k.constant_int(3, DType::Int32))};
      expect_column_baseline_bits(
          k, {Lie::RowValue, Lie::RowValue, Lie::Elements, Lie::Elements, Lie::Elements}, isa,
          "counts");
    }
  }
}

// The rendering follows on the planning thread and takes over; compiled again, the kernel
// takes the rendering at once.
TEST(JitBaselineRows, TheRenderingSwapsInWhenReady) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  LoopKernel k = softmax(DType::Float32);  // scaled by a constant no other test uses
  k.stores[0] = k.binary(ExprOp::Mul, k.stores[0], k.constant(1.8125, DType::Float32));
  const std::vector<Lie> lies = {Lie::Elements, Lie::Elements};
  std::vector<Buffer> first = buffers(k, lies, 9, 300, 5, false), second = first;
  std::shared_ptr<CompiledKernel> kernel;
  const int64_t renders = cpu_jit_counters().kernels.load();
  {
    kiln::testing::PlanningThreadHold hold;
    kernel = cpu_target().compile(k);
    EXPECT_EQ(cpu_jit_counters().kernels.load(), renders) << "rendered before its first launch";
    const int64_t launches = cpu_jit_counters().baseline_launches.load();
    launch(*kernel, first, 9, 300, {});
    EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches + 1);
  }
  tracer::wait_for_compiles();
  EXPECT_EQ(cpu_jit_counters().kernels.load(), renders + 1) << "rendered on the planning thread";
  const int64_t launches = cpu_jit_counters().baseline_launches.load();
  launch(*kernel, second, 9, 300, {});
  EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches) << "the rendering runs now";
  EXPECT_EQ(first[0].bytes, second[0].bytes);
  auto again = cpu_target().compile(k);
  EXPECT_FALSE(dynamic_cast<CpuKernel&>(*again).runs_baseline(row_layout(k)));
}

// A column kernel's rendering (its column variant) follows likewise.
TEST(JitBaselineColumns, TheRenderingSwapsInWhenReady) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);  // (x * 1.6875 - c).sum(0), x - c
  const int32_t d = k.binary(
      ExprOp::Sub, k.binary(ExprOp::Mul, k.load(0), k.constant(1.6875, DType::Float32)), k.load(1));
  k.stores = {k.reduce(ExprOp::ReduceSum, d), d};
  const std::vector<Lie> lies = {Lie::RowValue, Lie::Elements, Lie::Elements, Lie::RowValue};
  std::vector<Buffer> first = column_buffers(k, lies, 200, 40, 9, false), second = first;
  CpuLaunchHint hint;
  hint.columns = true;
  std::shared_ptr<CompiledKernel> kernel;
  const int64_t renders = cpu_jit_counters().kernels.load();
  {
    kiln::testing::PlanningThreadHold hold;
    kernel = cpu_target().compile(k, hint);
    EXPECT_EQ(cpu_jit_counters().kernels.load(), renders) << "rendered before its first launch";
    const int64_t launches = cpu_jit_counters().baseline_launches.load();
    launch_columns(*kernel, first, 200, 40, {});
    EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches + 1);
  }
  tracer::wait_for_compiles();
  EXPECT_EQ(cpu_jit_counters().kernels.load(), renders + 1) << "rendered on the planning thread";
  const int64_t launches = cpu_jit_counters().baseline_launches.load();
  launch_columns(*kernel, second, 200, 40, {});
  EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches) << "the rendering runs now";
  EXPECT_EQ(first[0].bytes, second[0].bytes);
  EXPECT_EQ(first[1].bytes, second[1].bytes);
}

// Rows longer than a chunk (their Reduces may split across threads) take the rendering at once.
// Launches too large for baseline code to pay run it by blocks of rows until the rendering lands,
// then the rendering over the rest (a progressive launch), with its bits either way: all blocks
// with the rendering held back, the first only when it lands after it; the planner's size hint
// no longer keeps a kernel from its baseline code.
TEST(JitBaselineRows, LongRowsRenderLargeLaunchesRunBaselineCodeUntilTheRenderingLands) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  LoopKernel k = softmax(DType::Float32);
  k.stores[0] = k.binary(ExprOp::Mul, k.stores[0], k.constant(1.4375, DType::Float32));
  const std::vector<Lie> lies = {Lie::Elements, Lie::Elements};
  EXPECT_FALSE(BaselineRowKernel::takes_rows(kRowProgramChunk + 1));
  {
    const int64_t rows = 1, n = kRowProgramChunk + 7;
    forget_cpu_kernels();
    kiln::testing::PlanningThreadHold hold;
    auto kernel = cpu_target().compile(k);
    ASSERT_TRUE(dynamic_cast<CpuKernel&>(*kernel).runs_baseline(row_layout(k)));
    std::vector<Buffer> ops = buffers(k, lies, rows, n, 3, false);
    const int64_t launches = cpu_jit_counters().baseline_launches.load();
    const int64_t renders = cpu_jit_counters().kernels.load();
    launch(*kernel, ops, rows, n, {});
    EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches);
    EXPECT_EQ(cpu_jit_counters().kernels.load(), renders + 1);
  }
  const int64_t rows = 4099, n = 1024;  // 4M elements: past the cost model's limit
  std::vector<Buffer> want = buffers(k, lies, rows, n, 5, true);
  {
    ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
    forget_cpu_kernels();
    launch(*cpu_target().compile(k), want, rows, n, {});
  }
  const int64_t block_rows = kProgressiveBlockElements / n;
  for (bool lands : {false, true}) {
    std::vector<Buffer> got = buffers(k, lies, rows, n, 5, true);
    const kiln::testing::Progress p = kiln::testing::progressive_launch(
        lands,
        [&] {
          auto kernel = cpu_target().compile(k);
          EXPECT_TRUE(dynamic_cast<CpuKernel&>(*kernel).runs_baseline(row_layout(k)));
          return kernel;
        },
        [&](CompiledKernel& kernel) { launch(kernel, got, rows, n, {}); });
    EXPECT_EQ(got[0].bytes, want[0].bytes) << (lands ? "landing after a block" : "held back");
    EXPECT_EQ(p.blocks, lands ? 1 : (rows + block_rows - 1) / block_rows);
    EXPECT_EQ(p.progressive, 1);
    EXPECT_EQ(p.renders, lands ? 1 : 0);
  }
  forget_cpu_kernels();
  CpuLaunchHint hint;
  hint.elements = rows * n;
  kiln::testing::PlanningThreadHold hold;
  const size_t baselines = cpu_jit_baseline_count();
  auto hinted = cpu_target().compile(k, hint);
  EXPECT_EQ(cpu_jit_baseline_count(), baselines + 1) << "a large first launch gets one too";
  EXPECT_TRUE(dynamic_cast<CpuKernel&>(*hinted).runs_baseline(row_layout(k)));
}

// A column kernel's large launch likewise, by blocks of columns.
TEST(JitBaselineColumns, LargeLaunchesRunBaselineCodeUntilTheRenderingLands) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);  // (x * 1.5625 - c).sum(0), x - c
  const int32_t d = k.binary(
      ExprOp::Sub, k.binary(ExprOp::Mul, k.load(0), k.constant(1.5625, DType::Float32)), k.load(1));
  k.stores = {k.reduce(ExprOp::ReduceSum, d), d};
  const std::vector<Lie> lies = {Lie::RowValue, Lie::Elements, Lie::Elements, Lie::RowValue};
  const int64_t n = 600, w = 4100;  // 2.5M elements, past the limit; rows not split
  CpuLaunchHint hint;
  hint.columns = true;
  std::vector<Buffer> want = column_buffers(k, lies, n, w, 9, true);
  {
    ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
    forget_cpu_kernels();
    launch_columns(*cpu_target().compile(k, hint), want, n, w, {});
  }
  for (bool lands : {false, true}) {
    std::vector<Buffer> got = column_buffers(k, lies, n, w, 9, true);
    const kiln::testing::Progress p = kiln::testing::progressive_launch(
        lands, [&] { return cpu_target().compile(k, hint); },
        [&](CompiledKernel& kernel) { launch_columns(kernel, got, n, w, {}); });
    EXPECT_EQ(got[0].bytes, want[0].bytes) << (lands ? "landing after a block" : "held back");
    EXPECT_EQ(got[1].bytes, want[1].bytes) << (lands ? "landing after a block" : "held back");
    EXPECT_EQ(p.progressive, 1);
    EXPECT_EQ(p.renders, lands ? 1 : 0);
    if (lands) {
      EXPECT_EQ(p.blocks, 1);
    } else {
      EXPECT_GT(p.blocks, 1) << "blocks of columns";
    }
  }
}

}  // namespace
}  // namespace kiln::jit
