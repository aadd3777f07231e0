// The baseline tier of CPU pointwise kernels (jit/cpu/baseline_kernel.h, op_kernels.h): a new
// kernel launches code made of op kernels at once, its own rendering follows on the planning
// thread and is swapped in. Checked here: the baseline code gives the rendered kernel's bits
// (hand-built kernels over every kind of operand, layout, row length and aliasing, on every ISA
// path), the swap, a kernel with an op kernel not rendered yet (no baseline: rendered as before,
// the op kernel queued), and a background render that fails (the kernel keeps its baseline code,
// with a warning). The tier over random programs: the JIT fuzzers and JitCpuKernels run under
// KILN_JIT_BASELINE=only in ctest (kiln.jit_baseline.kernels, tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/baseline_kernel.h"
#include "jit/cpu/cpu_kernel.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/op_kernels.h"
#include "jit_kernel_util.h"
#include "planning_thread_hold.h"
#include "progressive_launch.h"
#include "tracer/region_runner.h"

namespace kiln::jit {
namespace {

using kiln::testing::ConfigOverride;
using kiln::testing::PlanningThreadHold;
using kiln::testing::supported_jit_isas;

// One operand's buffer and strides (in elements) over a [rows, cols] index space.
struct Operand {
  DType type;
  std::vector<uint8_t> bytes;
  int64_t row_stride = 0, col_stride = 1;
};

// Deterministic contents of every dtype, specials included (Bool as 0 / 1).
void fill(Operand& op, uint32_t salt) {
  std::mt19937 rng(salt);
  const size_t es = itemsize(op.type);
  const double sp[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, 1e-30, 88.0, NAN, INFINITY};
  for (size_t i = 0; i < op.bytes.size() / es; ++i) {
    const double v = rng() % 4 == 0 ? sp[rng() % std::size(sp)]
                                    : std::ldexp(static_cast<double>(rng() % 2001) - 1000.0, -7);
    uint8_t* at = op.bytes.data() + i * es;
    switch (op.type) {
      case DType::Bool:
        testing::store_value(op.type, static_cast<double>(rng() % 2), at);
        break;
      case DType::Int32:
      case DType::Int64:
        testing::store_value(op.type, static_cast<double>(rng() % 41) - 20.0, at);
        break;
      default:
        testing::store_value(op.type, v, at);
    }
  }
}

enum class Shape { Contiguous, RowBroadcast, ScalarBroadcast, Strided };

// Operands for `k` over [rows, cols]: outputs contiguous or strided, inputs in `shape`.
std::vector<Operand> operands(const LoopKernel& k, int64_t rows, int64_t cols, Shape shape,
                              uint32_t salt) {
  std::vector<Operand> ops;
  for (int32_t j = 0; j < k.num_operands(); ++j) {
    Operand op{k.operand_dtype(j), {}, cols, 1};
    const bool input = j >= k.num_outputs();
    if (shape == Shape::Strided) {  // every other element, rows padded
      op.col_stride = 2;
      op.row_stride = 2 * cols + 3;
    } else if (input && shape == Shape::RowBroadcast && j % 2 == 1) {
      op.row_stride = 0;  // one row for every row (a bias)
    } else if (input && shape == Shape::ScalarBroadcast && j % 2 == 1) {
      op.row_stride = 0;
      op.col_stride = 0;
    }
    const int64_t span = (rows - 1) * op.row_stride + (cols - 1) * op.col_stride + 1;
    op.bytes.assign(static_cast<size_t>(span) * itemsize(op.type), 0);
    fill(op, salt + static_cast<uint32_t>(j) * 7919u);
    ops.push_back(std::move(op));
  }
  return ops;
}

// Launches `kernel` over `ops`; output 0 may be input 0's buffer (`alias`).
void launch(CompiledKernel& kernel, std::vector<Operand>& ops, int64_t rows, int64_t cols,
            bool alias, const std::vector<Scalar>& params) {
  LaunchArgs la;
  la.sizes = {rows, cols};
  const int32_t nout = kernel.source().num_outputs();
  for (size_t j = 0; j < ops.size(); ++j) {
    Operand& op = ops[alias && j == static_cast<size_t>(nout) ? 0 : j];
    const auto es = static_cast<int64_t>(itemsize(op.type));
    la.ptrs.push_back(reinterpret_cast<char*>(op.bytes.data()));
    la.strides.push_back(DimVector{op.row_stride * es, op.col_stride * es});
  }
  la.params = std::span<const Scalar>(params.data(), params.size());
  kernel.launch(la);
}

// The outputs' bytes of `k` launched with its baseline code and rendered, on `isa`.
void expect_baseline_bits(const LoopKernel& k, const std::string& isa, const std::string& what,
                          const std::vector<Scalar>& params = {}) {
  ConfigOverride<std::string> isa_override(config().jit_isa, isa);
  std::shared_ptr<CompiledKernel> rendered, baseline;
  {
    ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
    rendered = cpu_target().compile(k);
  }
  forget_cpu_kernels();  // a kernel the process has rendered gets no baseline code
  // (Only while the baseline kernel launches too: under On its first launch of a layout queues
  // that layout's rendering, which the next launches would take.)
  ConfigOverride<BaselineTier> only(config().jit_baseline, BaselineTier::Only);
  // Its op kernels first (a kernel finding one missing gets no baseline code).
  (void)cpu_target().compile(k);
  tracer::wait_for_compiles();
  baseline = cpu_target().compile(k);
  auto* cpu = dynamic_cast<CpuKernel*>(baseline.get());
  ASSERT_NE(cpu, nullptr);
  ASSERT_TRUE(cpu->runs_baseline(all_contiguous(k))) << what << "\n" << to_text(k);
  const int64_t cols_list[] = {1, 3, 16, 17, 255, 1024, 1025, 3001};
  const int64_t rows_list[] = {1, 2, 5, 300};
  uint32_t salt = 1;
  for (Shape shape :
       {Shape::Contiguous, Shape::RowBroadcast, Shape::ScalarBroadcast, Shape::Strided})
    for (int64_t cols : cols_list)
      for (int64_t rows : rows_list) {
        if (rows * cols > 40000) continue;
        for (bool alias : {false, true}) {
          if (alias && (k.num_inputs() == 0 || k.operand_dtype(0) != k.inputs[0] ||
                        shape == Shape::RowBroadcast || shape == Shape::ScalarBroadcast))
            continue;
          ++salt;
          std::vector<Operand> a = operands(k, rows, cols, shape, salt);
          std::vector<Operand> b = a;
          const int64_t launches = cpu_jit_counters().baseline_launches.load();
          launch(*baseline, a, rows, cols, alias, params);
          EXPECT_GT(cpu_jit_counters().baseline_launches.load(), launches);
          launch(*rendered, b, rows, cols, alias, params);
          for (int32_t j = 0; j < k.num_outputs(); ++j)
            EXPECT_EQ(a[j].bytes, b[j].bytes)
                << what << " on " << isa << ": output " << j << " differs at [" << rows << ", "
                << cols << "], shape " << static_cast<int>(shape) << (alias ? ", in place" : "")
                << "\n"
                << to_text(k);
        }
      }
}

TEST(JitBaseline, GivesTheRenderedKernelsBits) {
  for (const std::string& isa : supported_jit_isas()) {
    {  // gelu's chain (constants), stored twice
      LoopKernel k;
      k.inputs = {DType::Float32};
      const int32_t x = k.load(0);
      const int32_t c = k.binary(ExprOp::Mul, x, k.constant(0.044715, DType::Float32));
      const int32_t t = k.unary(
          ExprOp::Tanh, k.binary(ExprOp::Mul, k.binary(ExprOp::Add, x, k.binary(ExprOp::Mul, c, x)),
                                 k.constant(0.7978845608, DType::Float32)));
      const int32_t y =
          k.binary(ExprOp::Mul, k.binary(ExprOp::Mul, x, k.constant(0.5, DType::Float32)),
                   k.binary(ExprOp::Add, t, k.constant(1.0, DType::Float32)));
      k.stores = {y, t, y};
      expect_baseline_bits(k, isa, "gelu");
    }
    {  // a compare, a select, a cast, a Bool output, a param, two inputs
      LoopKernel k;
      k.inputs = {DType::Float64, DType::Float64};
      k.params = {DType::Float64};
      const int32_t a = k.load(0), b = k.load(1);
      const int32_t m = k.binary(ExprOp::Lt, a, k.param(0));
      const int32_t s = k.select(m, k.unary(ExprOp::Exp, b), k.binary(ExprOp::Sub, a, b));
      k.stores = {s, m, k.cast(s, DType::Float32)};
      expect_baseline_bits(k, isa, "select", {Scalar(0.25)});
    }
    {  // pow by a constant (pow_scalar's path) and by a loaded exponent; integer arithmetic
      LoopKernel k;
      k.inputs = {DType::Float32, DType::Int64};
      const int32_t x = k.load(0), n = k.load(1);
      const int32_t p = k.binary(ExprOp::Pow, x, k.constant(3.0, DType::Float32));
      const int32_t q = k.binary(ExprOp::Pow, k.unary(ExprOp::Abs, x), k.cast(n, DType::Float32));
      const int32_t i =
          k.binary(ExprOp::Mul, n, k.binary(ExprOp::Add, n, k.constant_int(3, DType::Int64)));
      k.stores = {k.binary(ExprOp::Add, p, q), i};
      expect_baseline_bits(k, isa, "pow");
    }
    {  // in place, out0 (in0) computed before a later expression reads in0
      LoopKernel k;
      k.inputs = {DType::Float32};
      const int32_t x = k.load(0);
      const int32_t y = k.binary(ExprOp::Mul, x, k.constant(2.0, DType::Float32));
      k.stores = {y, k.binary(ExprOp::Add, x, k.constant(1.0, DType::Float32))};
      expect_baseline_bits(k, isa, "read after");
    }
    {  // an input stored as it is beside a value computed from it (in place: out0 is in0)
      LoopKernel k;
      k.inputs = {DType::Bool, DType::Bool};
      const int32_t a = k.load(0), b = k.load(1);
      k.stores = {k.binary(ExprOp::Or, a, b), a, k.unary(ExprOp::Not, b)};
      expect_baseline_bits(k, isa, "masks");
    }
  }
}

// x * a + b with a constant no other test uses (so that its rendering is new).
LoopKernel affine(double a, double b) {
  LoopKernel k;
  k.inputs = {DType::Float32};
  k.stores = {k.binary(ExprOp::Add, k.binary(ExprOp::Mul, k.load(0), k.constant(a, DType::Float32)),
                       k.constant(b, DType::Float32))};
  return k;
}

std::vector<float> run_affine(CompiledKernel& kernel, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -1.0f);
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i) - 7.0f;
  LaunchArgs la;
  la.sizes = {n};
  la.ptrs = {reinterpret_cast<char*>(y.data()), reinterpret_cast<char*>(x.data())};
  la.strides = {DimVector{4}, DimVector{4}};
  kernel.launch(la);
  return y;
}

// The warm-up's op kernels (common_op_kernels) are the ones a gelu chain, a select between two
// branches and a bias add ask for: the same sources, encoding for encoding (so that a program's
// first kernels find them rendered).
TEST(JitBaseline, TheWarmUpRendersTheOpKernelsOfCommonChains) {
  std::vector<std::vector<uint64_t>> common;
  for (const OpKernelRequest& r : common_op_kernels()) common.push_back(encode(r.source));
  auto covered = [&](const LoopKernel& k) {
    for (int32_t e = 0; e < static_cast<int32_t>(k.exprs.size()); ++e) {
      const ExprOp op = k.exprs[static_cast<size_t>(e)].op;
      if (op == ExprOp::Load || op == ExprOp::Const || op == ExprOp::Param) continue;
      const std::vector<uint64_t> want = encode(op_kernel_source(k, e));
      if (std::find(common.begin(), common.end(), want) == common.end()) {
        ADD_FAILURE() << "not among the warm-up's op kernels:\n" << to_text(op_kernel_source(k, e));
        return false;
      }
    }
    return true;
  };
  LoopKernel gelu;
  gelu.inputs = {DType::Float32};
  const int32_t x = gelu.load(0);
  const int32_t t =
      gelu.unary(ExprOp::Tanh, gelu.binary(ExprOp::Mul, gelu.binary(ExprOp::Add, x, x),
                                           gelu.constant(0.7978845608, DType::Float32)));
  gelu.stores = {gelu.binary(ExprOp::Mul, gelu.binary(ExprOp::Sub, t, x), x)};
  EXPECT_TRUE(covered(gelu));
  LoopKernel sel;
  sel.inputs = {DType::Float32, DType::Float32};
  const int32_t a = sel.load(0), b = sel.load(1);
  sel.stores = {sel.select(sel.binary(ExprOp::Gt, a, b), sel.unary(ExprOp::Exp, a),
                           sel.binary(ExprOp::Div, a, b))};
  EXPECT_TRUE(covered(sel));
}

TEST(JitBaseline, TheRenderingSwapsInWhenReady) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  const LoopKernel k = affine(1.375, -0.625);
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  std::shared_ptr<CompiledKernel> kernel;
  const int64_t renders = cpu_jit_counters().kernels.load();
  const size_t made = cpu_jit_baseline_count();
  std::vector<float> first;
  {
    PlanningThreadHold hold;
    kernel = cpu_target().compile(k);
    EXPECT_EQ(cpu_jit_counters().kernels.load(), renders) << "rendered before its first launch";
    EXPECT_EQ(cpu_jit_baseline_count(), made + 1);
    const int64_t launches = cpu_jit_counters().baseline_launches.load();
    first = run_affine(*kernel, 1000);
    EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches + 1);
  }
  tracer::wait_for_compiles();
  EXPECT_EQ(cpu_jit_counters().kernels.load(), renders + 1) << "rendered on the planning thread";
  const int64_t launches = cpu_jit_counters().baseline_launches.load();
  EXPECT_EQ(run_affine(*kernel, 1000), first);
  EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches) << "the rendering runs now";
  // Compiled again (another plan, a loop's next step), it takes the rendering at once.
  const size_t baselines = cpu_jit_baseline_count();
  auto again = cpu_target().compile(k);
  EXPECT_EQ(cpu_jit_baseline_count(), baselines);
  EXPECT_FALSE(dynamic_cast<CpuKernel&>(*again).runs_baseline(all_contiguous(k)));
  ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
  EXPECT_EQ(run_affine(*cpu_target().compile(k), 1000), first);
}

// A launch large enough that baseline code would cost more than a render (baseline_pays: gelu
// over 2^24 floats took 9.3 ms on it against 4.1 rendered) waits for no render: it runs baseline
// code by blocks on its own thread until the rendering lands on the planning thread, then the
// rendering over the rest (a progressive launch), with the rendering's bits either way: (1) the
// rendering held back, baseline code runs every block; (2) let land after the first block, the
// rendering runs the rest; (3) the planner's size hint no longer keeps a kernel from its
// baseline code.
TEST(JitBaseline, ALargeLaunchRunsBaselineCodeUntilTheRenderingLands) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  const LoopKernel k = affine(1.375, -0.625);
  const int64_t small = 1000, large = kMaxBaselineWork + 4099;  // past the limit; a short chunk
  ASSERT_TRUE(baseline_pays(k, small));
  ASSERT_FALSE(baseline_pays(k, large));
  forget_cpu_kernels();
  std::vector<float> want;
  {
    ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
    want = run_affine(*cpu_target().compile(k), large);
  }
  const int64_t block_chunks = kProgressiveBlockElements / 64;
  const int64_t blocks = ((large + 63) / 64 + block_chunks - 1) / block_chunks;
  {  // (1)
    forget_cpu_kernels();
    PlanningThreadHold hold;  // no background render can land meanwhile
    auto kernel = cpu_target().compile(k);
    EXPECT_TRUE(dynamic_cast<CpuKernel&>(*kernel).runs_baseline(all_contiguous(k)));
    const int64_t launches = cpu_jit_counters().baseline_launches.load();
    const int64_t progressive = cpu_jit_counters().progressive_launches.load();
    const int64_t renders = cpu_jit_counters().kernels.load();
    int64_t ran = 0;
    set_progressive_block_hook([&] { ++ran; });
    const std::vector<float> got = run_affine(*kernel, large);
    set_progressive_block_hook({});
    EXPECT_TRUE(got == want) << "the rendering's bits";
    EXPECT_EQ(ran, blocks) << "every block ran baseline code";
    EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches + 1);
    EXPECT_EQ(cpu_jit_counters().progressive_launches.load(), progressive + 1);
    EXPECT_EQ(cpu_jit_counters().kernels.load(), renders) << "it waited for no render";
    hold.release();
    tracer::wait_for_compiles();
    EXPECT_FALSE(dynamic_cast<CpuKernel&>(*kernel).runs_baseline(all_contiguous(k)));
    EXPECT_TRUE(run_affine(*kernel, large) == want);
    EXPECT_EQ(cpu_jit_counters().progressive_launches.load(), progressive + 1) << "rendered now";
  }
  {  // (2)
    std::vector<float> got;
    const kiln::testing::Progress p = kiln::testing::progressive_launch(
        true, [&] { return cpu_target().compile(k); },
        [&](CompiledKernel& kernel) { got = run_affine(kernel, large); });
    EXPECT_TRUE(got == want) << "baseline code's first block and the rendering's rest";
    EXPECT_EQ(p.blocks, 1);
    EXPECT_EQ(p.progressive, 1);
    EXPECT_EQ(p.renders, 1);
  }
  {  // (1) for a launch in tiles (its input transposed against its output)
    const int64_t rows = 2048, cols = 2100;
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1013) * 0.375f - 99.0f;
    auto transposed = [&](CompiledKernel& kernel) {
      std::vector<float> y(x.size(), -1.0f);
      LaunchArgs la;
      la.sizes = {rows, cols};
      la.ptrs = {reinterpret_cast<char*>(y.data()), reinterpret_cast<char*>(x.data())};
      la.strides = {DimVector{cols * 4, 4}, DimVector{4, rows * 4}};
      kernel.launch(la);
      return y;
    };
    std::vector<float> tiled_want;
    {
      ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
      forget_cpu_kernels();
      tiled_want = transposed(*cpu_target().compile(k));
    }
    std::vector<float> got;
    const kiln::testing::Progress p = kiln::testing::progressive_launch(
        false, [&] { return cpu_target().compile(k); },
        [&](CompiledKernel& kernel) { got = transposed(kernel); });
    EXPECT_TRUE(got == tiled_want) << "the rendering's bits, in tiles";
    EXPECT_GT(p.blocks, 1);
    EXPECT_EQ(p.progressive, 1);
  }
  {  // (3)
    forget_cpu_kernels();
    PlanningThreadHold hold;
    CpuLaunchHint hint;
    hint.elements = large;
    const size_t baselines = cpu_jit_baseline_count();
    auto hinted = cpu_target().compile(k, hint);
    EXPECT_EQ(cpu_jit_baseline_count(), baselines + 1) << "a large first launch gets one too";
    EXPECT_TRUE(dynamic_cast<CpuKernel&>(*hinted).runs_baseline(all_contiguous(k)));
  }
}

TEST(JitBaseline, AKernelWithAnOpKernelNotRenderedYetIsRenderedFirst) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  // The add below needs its op kernel too: ctest runs this test alone, without the warm-up.
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  LoopKernel k;  // pow by an exponent no other test uses: its op kernel holds the constant
  k.inputs = {DType::Float32};
  k.stores = {k.binary(ExprOp::Pow, k.load(0), k.constant(2.625, DType::Float32))};
  const size_t op_kernels = op_kernel_count();
  {
    PlanningThreadHold hold;
    const int64_t renders = cpu_jit_counters().kernels.load();
    auto kernel = cpu_target().compile(k);
    EXPECT_EQ(cpu_jit_counters().kernels.load(), renders + 1) << "no baseline: rendered at once";
    EXPECT_FALSE(dynamic_cast<CpuKernel&>(*kernel).runs_baseline(all_contiguous(k)));
  }
  tracer::wait_for_compiles();  // the missing op kernel rendered meanwhile
  EXPECT_GT(op_kernel_count(), op_kernels);
  LoopKernel k2 = k;  // another kernel with that op kernel
  k2.stores = {k2.binary(ExprOp::Add, k2.stores[0], k2.constant(0.125, DType::Float32))};
  PlanningThreadHold hold;
  auto kernel = cpu_target().compile(k2);
  EXPECT_TRUE(dynamic_cast<CpuKernel&>(*kernel).runs_baseline(all_contiguous(k2)));
}

TEST(JitBaseline, AFailedRenderingKeepsTheBaselineCode) {
  ConfigOverride<BaselineTier> on(config().jit_baseline, BaselineTier::On);
  (void)render_op_kernels(common_op_kernels(), active_jit_isa());
  const LoopKernel k = affine(-2.375, 0.875);
  std::vector<float> want;
  {
    ConfigOverride<BaselineTier> off(config().jit_baseline, BaselineTier::Off);
    want = run_affine(*cpu_target().compile(affine(-2.375, 0.875)), 777);
  }
  forget_cpu_kernels();  // so that the background render is a render, which the fault hits
  const int64_t kept = cpu_jit_counters().baseline_kept.load();
  std::shared_ptr<CompiledKernel> kernel;
  {
    PlanningThreadHold hold;
    kernel = cpu_target().compile(k);
    inject_cpu_codegen_faults(1);
  }
  tracer::wait_for_compiles();
  inject_cpu_codegen_faults(0);
  EXPECT_EQ(cpu_jit_counters().baseline_kept.load(), kept + 1);
  const int64_t launches = cpu_jit_counters().baseline_launches.load();
  EXPECT_EQ(run_affine(*kernel, 777), want);
  EXPECT_EQ(run_affine(*kernel, 777), want);
  EXPECT_EQ(cpu_jit_counters().baseline_launches.load(), launches + 2) << "it keeps the baseline";
}

}  // namespace
}  // namespace kiln::jit
