// Matmuls in JIT plans (jit/plan/blas_step.h, ops/cpu/blas_gemm.h; docs/jit.md "Matmul steps"):
// the row split of a Float32 GEMM against one call, bitwise; an MLP layer's forward is one BLAS
// step plus one epilogue kernel that runs per row block and writes over the product; transposed
// operands (x.matmul(w.t()), the weight gradient's x.t().matmul(g)) are never copied; epilogues of
// every kind, Float64, batched and 3-D products, and an epilogue whose output is an operand's
// memory, bitwise equal to eager on every ISA path with one and two threads; optimizer steps
// (optim::SGD with momentum, optim::Adam) over N parameters are at most N kernels writing in
// place; training steps with gradient accumulation and zero_grad equal eager's, step by step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/cpu/cpu_target.h"
#include "jit/plan/blas_step.h"
#include "jit/plan/jit_plan.h"
#include "jit/plan/planner.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "ops/cpu/blas_gemm.h"
#include "ops/cpu/xsmm_gemm.h"
#include "runtime/allocator.h"
#include "runtime/dispatcher.h"
#include "runtime/parallel.h"

namespace kiln {
namespace {

using testing::ConfigOverride;
using testing::expect_bitwise_equal;
using testing::JitMode;

using JitMatmulTest = testing::JitRecordedTest<>;

// What the cached regions' plans hold: kernel steps, BLAS steps (and how many have an
// epilogue), eager steps other than views, and the op names of those.
struct PlanShape {
  int kernels = 0, blas = 0, epilogues = 0, other_eager = 0;
  std::string others;
};
PlanShape plan_shape() {
  PlanShape s;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    std::shared_ptr<tracer::RegionPlan> p = r->jit_plan();
    const auto* jp = dynamic_cast<const jit::JitPlan*>(p.get());
    EXPECT_NE(jp, nullptr) << "a region has no JIT plan";
    if (jp == nullptr) continue;
    for (const jit::Step& st : jp->steps()) {
      if (st.kernel) {
        ++s.kernels;
        continue;
      }
      if (st.blas) {
        ++s.blas;
        s.epilogues += st.epilogue;
        continue;
      }
      const tracer::Node& n = jp->graph().nodes[st.node];
      if (op_def(n.op).flags & kIsView) continue;
      ++s.other_eager;
      s.others += std::string(op_def(n.op).name) + " ";
    }
  }
  return s;
}

// Runs `program` 3 times eagerly and recorded, bitwise equal each time; returns the CPU
// allocations of the last recorded run (the region runs its cached plan then).
uint64_t run_both(const std::function<TensorList(int)>& program, const std::string& what) {
  std::vector<TensorList> want, got;
  {
    JitMode off(false);
    for (int it = 0; it < 3; ++it) want.push_back(program(it));
  }
  uint64_t allocations = 0;
  {
    JitMode on(true);
    for (int it = 0; it < 3; ++it) {
      if (it == 2) {
        kiln::sync();
        allocations = testing::cpu_allocations();
      }
      got.push_back(program(it));
      kiln::sync();
      if (it == 2) allocations = testing::cpu_allocations() - allocations;
    }
  }
  for (int it = 0; it < 3; ++it)
    testing::expect_lists_bitwise_equal(got[it], want[it],
                                        what + ", iteration " + std::to_string(it));
  return allocations;
}

// The split's contract: rows blocks of a Float32 product, one GEMM call each, give the bits of
// one call over all rows, for every transpose combination, when the split is allowed.
TEST(JitMatmulBlas, RowSplitsHoldTheMinimumWorkAndMatchEager) {
  std::mt19937 rng(14);
  int split = 0;
  for (int t = 0; t < 60; ++t) {
    const int64_t M = 2 + rng() % 500, N = 1 + rng() % 500, K = 1 + rng() % 500;
    const bool ta = rng() % 2, tb = rng() % 2;
    const int threads = 2 + static_cast<int>(rng() % 2);  // row blocks: 2 or 3 threads
    Tensor a = ta ? testing::eager_normal({K, M}, 2 * t).t() : testing::eager_normal({M, K}, 2 * t);
    Tensor b = tb ? testing::eager_normal({N, K}, 2 * t + 1).t()
                  : testing::eager_normal({K, N}, 2 * t + 1);
    Tensor blocks = empty({M, N});
    // Only the block count follows the thread count here (the blocks run one after the other).
    ConfigOverride<int> nt(config().num_threads, threads);
    const blas::RowSplit s = blas::plan_row_split(a.impl(), b.impl(), kFloat32, true);
    if (s.blocks < 2) {
      // Too little work for two blocks, or (on libxsmm) too few rows for two blocks of its rows.
      EXPECT_TRUE((M / 2) * N * K < blas::split_min_mnk() ||
                  (blas::split_min_mnk() == blas::kXsmmSplitMinMnk && M / 2 < blas::kBlockRows))
          << M << "x" << N << "x" << K;
      continue;
    }
    ++split;
    EXPECT_LE(s.blocks, threads);
    EXPECT_GE((M / s.blocks) * N * K, blas::split_min_mnk());
    if (blas::split_min_mnk() == blas::kXsmmSplitMinMnk) {
      EXPECT_GE(M / s.blocks, blas::kBlockRows);
    }
    EXPECT_EQ(s.la.trans, ta);
    EXPECT_EQ(s.lb.trans, tb);
    // Eager matmul computes the same blocks (ops/matmul.cpp): its bits are the blocks' on
    // every CPU (one whole-product call's are not, on some: ops/cpu/blas_gemm.h).
    blas::set_threads(1);
    for (int64_t i = 0; i < s.blocks; ++i)
      blas::gemm_rows(s, a.impl(), b.impl(), blocks.impl(), blas::block_begin(s, i),
                      blas::block_begin(s, i + 1));
    expect_bitwise_equal(blocks, a.matmul(b), "row blocks against eager matmul");
  }
  EXPECT_GT(split, 20);
}

// What is never split: Float64, one thread, a product whose blocks would be small, a batch.
TEST(JitMatmulBlas, SplitOnlyWhereItKeepsTheBits) {
  ConfigOverride<int> nt(config().num_threads, 2);
  auto blocks = [](const Tensor& a, const Tensor& b, bool row_major = true) {
    return blas::plan_row_split(a.impl(), b.impl(), a.dtype(), row_major).blocks;
  };
  EXPECT_EQ(blocks(testing::eager_normal({256, 256}, 1), testing::eager_normal({256, 256}, 2)), 2);
  EXPECT_EQ(blocks(testing::eager_normal({256, 256}, 1, kFloat64),
                   testing::eager_normal({256, 256}, 2, kFloat64)),
            0);
  EXPECT_EQ(blocks(testing::eager_normal({64, 64}, 1), testing::eager_normal({64, 64}, 2)),
            0);  // 32 * 64 * 64 per block
  Tensor gapped =
      testing::eager_normal({256, 512}, 3).slice(1, 0, 512, 2);  // a column step: copied by eager
  EXPECT_EQ(blocks(gapped, testing::eager_normal({256, 256}, 2)), 0);
  EXPECT_EQ(
      blocks(testing::eager_normal({256, 256}, 1), testing::eager_normal({256, 256}, 2), false),
      0);  // a strided output
  ConfigOverride<int> one(config().num_threads, 1);
  EXPECT_EQ(blocks(testing::eager_normal({256, 256}, 1), testing::eager_normal({256, 256}, 2)), 0);
}

// From kWholeCallMinThreads kiln threads on, a product is one call on OpenBLAS's threads (no
// row blocks), one per kMnkPerBlasThread multiply-adds up to the thread count; batches of small
// products still go over kiln's threads. A linear layer's forward and backward through the JIT
// (its BLAS steps, the epilogue as a step of its own) keep eager's bits at 4 and 16 threads.
TEST_F(JitMatmulTest, ManyThreadsMakeOneCallOnOpenBlasThreads) {
  const Tensor a = testing::eager_normal({256, 256}, 1), b = testing::eager_normal({256, 256}, 2);
  for (int threads : {4, 16}) {
    ConfigOverride<int> nt(config().num_threads, threads);
    EXPECT_EQ(blas::plan_row_split(a.impl(), b.impl(), kFloat32, true).blocks, 0) << threads;
    EXPECT_EQ(blas::threads_for(64, 256, 256), 4) << threads;  // 4.2M multiply-adds
    EXPECT_EQ(blas::threads_for(256, 1024, 1024), threads) << threads;
    EXPECT_EQ(blas::threads_for(16, 16, 16), 1) << threads;
    EXPECT_TRUE(blas::split_batches(512, 512, 64)) << threads;
    EXPECT_FALSE(blas::split_batches(2048, 1024, 512)) << threads;
  }
  {
    ConfigOverride<int> nt(config().num_threads, 2);  // fewer: row blocks, one BLAS thread
    EXPECT_EQ(blas::plan_row_split(a.impl(), b.impl(), kFloat32, true).blocks, 2);
    EXPECT_EQ(blas::threads_for(64, 256, 256), 1);
  }
  const Tensor x = testing::eager_normal({256, 192}, 7), w = testing::eager_normal({320, 192}, 8),
               bias = testing::eager_normal({320}, 9), g = testing::eager_normal({256, 320}, 10);
  for (int threads : {4, 16}) {
    ConfigOverride<int> nt(config().num_threads, threads);
    tracer::RegionCache::instance().clear();
    const std::string what = std::to_string(threads) + " threads";
    run_both(
        [&](int) {
          return TensorList{relu(x.matmul(w.t()) + bias), g.matmul(w), g.t().matmul(x)};
        },
        what);
    const PlanShape s = plan_shape();
    EXPECT_EQ(s.blas, 3) << what;
  }
}

// Column blocks (ops/cpu/blas_gemm.h): small Float32 products on 4 or more threads split C's
// columns, at least kColSplitMinCols each; not on fewer threads, inside a parallel region, for
// Float64, one row or a large product. Each split product against a float64 reference within
// the summation bound (a block computed at the wrong columns of A, B or C is off by far more),
// every transpose combination, with a column count that does not divide evenly.
TEST(JitMatmulBlas, ColumnBlocksOnManyThreadsComputeTheProduct) {
  const Tensor a = testing::eager_normal({64, 256}, 1), w = testing::eager_normal({256, 256}, 2);
  for (int threads : {4, 16}) {
    ConfigOverride<int> nt(config().num_threads, threads);
    EXPECT_EQ(blas::plan_col_split(a.impl(), w.t().impl(), kFloat32).blocks, threads);
    const Tensor narrow_w = testing::eager_normal({40, 256}, 3);  // 40 columns: 2 blocks
    EXPECT_EQ(blas::plan_col_split(a.impl(), narrow_w.t().impl(), kFloat32).blocks, 2);
    const Tensor big = testing::eager_normal({1024, 1024}, 4);
    EXPECT_LT(blas::plan_col_split(big.impl(), big.impl(), kFloat32).blocks, 2);
    const Tensor a64 = testing::eager_normal({64, 256}, 5, kFloat64);
    EXPECT_LT(blas::plan_col_split(a64.impl(), a64.t().impl(), kFloat64).blocks, 2);
    parallel_for(0, 2, 1, [&](int64_t, int64_t) {
      EXPECT_LT(blas::plan_col_split(a.impl(), w.impl(), kFloat32).blocks, 2);
    });
  }
  {
    ConfigOverride<int> nt(config().num_threads, 2);
    EXPECT_LT(blas::plan_col_split(a.impl(), w.impl(), kFloat32).blocks, 2);
  }
  std::mt19937 rng(21);
  for (int t = 0; t < 24; ++t) {
    const int64_t M = 2 + rng() % 100, N = 32 + rng() % 300, K = 1 + rng() % 300;
    const bool ta = rng() % 2, tb = rng() % 2;
    ConfigOverride<int> nt(config().num_threads, t % 2 ? 16 : 5);
    const Tensor x =
        ta ? testing::eager_normal({K, M}, 3 * t).t() : testing::eager_normal({M, K}, 3 * t);
    const Tensor y = tb ? testing::eager_normal({N, K}, 3 * t + 1).t()
                        : testing::eager_normal({K, N}, 3 * t + 1);
    const blas::ColSplit split = blas::plan_col_split(x.impl(), y.impl(), kFloat32);
    ASSERT_GE(split.blocks, 2) << M << "x" << N << "x" << K;
    const Tensor c = empty({M, N});
    ASSERT_TRUE(blas::gemm_2d(x.impl(), y.impl(), c.impl()));
    const std::vector<float> xv = x.contiguous().to_vector<float>(),
                             yv = y.contiguous().to_vector<float>(), cv = c.to_vector<float>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          want += double(xv[i * K + k]) * yv[k * N + j];
          mag += std::abs(double(xv[i * K + k]) * yv[k * N + j]);
        }
        ASSERT_LE(std::abs(cv[i * N + j] - want), 2.0 * double(K) * 0x1p-24 * mag + 1e-30)
            << M << "x" << N << "x" << K << " ta " << ta << " tb " << tb << " at " << i << "," << j;
      }
  }
}

// Only CPU products are BLAS steps (a CUDA matmul in a region stays an eager step, and a region
// of CUDA products alone gets no CPU plan); checked on hand-made graphs, no GPU needed.
TEST(JitMatmulBlas, OnlyCpuMatmulsAreBlasSteps) {
  for (const Device dev : {Device::cpu(), Device::cuda()}) {
    tracer::Graph g;
    const tracer::ValueId a = g.add_input({64, 32}, kFloat32, dev);
    const tracer::ValueId b = g.add_input({32, 16}, kFloat32, dev);
    OutputMeta m;
    m.sizes = {64, 16};
    m.dtype = kFloat32;
    m.device = dev;
    const tracer::ValueId c = g.add_node(OpId::Matmul, Attrs{}, {a, b}, m);
    g.set_outputs({c});
    EXPECT_EQ(jit::is_cpu_matmul(g, g.nodes[0]), dev.is_cpu());
    std::unique_ptr<jit::JitPlan> p = jit::make_jit_plan(g, {});
    EXPECT_EQ(p != nullptr, dev.is_cpu());
    if (p) {
      ASSERT_EQ(p->steps().size(), 1u);
      EXPECT_TRUE(p->steps()[0].blas);
    }
  }
}

// relu(x.matmul(w.t()) + b): one BLAS step with its epilogue, one kernel, no other eager step
// than w.t() (a view); the product is the run's only allocation (the transposed weight is not
// copied and the epilogue writes over the product); every ISA, one, two and sixteen threads. The
// epilogue runs once over the product on one thread, per row block on two, per block of the
// product's split over kiln's threads on sixteen (this small product's column blocks, on libxsmm
// and OpenBLAS alike: blas::AfterBlock).
TEST_F(JitMatmulTest, LinearReluIsOneBlasStepAndOneEpilogueKernel) {
  const Tensor x = testing::eager_normal({256, 192}, 1), w = testing::eager_normal({320, 192}, 2),
               b = testing::eager_normal({320}, 3);
  for (const std::string& isa : testing::supported_jit_isas())
    for (int threads : {1, 2, 16}) {
      ConfigOverride<std::string> isa_override(config().jit_isa, isa);
      ConfigOverride<int> nt(config().num_threads, threads);
      tracer::RegionCache::instance().clear();
      const std::string what = isa + ", " + std::to_string(threads) + " threads";
      const int64_t launches = jit::cpu_jit_counters().launches.load();
      const uint64_t allocations =
          run_both([&](int) { return TensorList{relu(x.matmul(w.t()) + b)}; }, what);
      const int64_t per_run = (jit::cpu_jit_counters().launches.load() - launches) / 3;
      if (threads == 1)
        EXPECT_EQ(per_run, 1) << what;
      else
        EXPECT_GE(per_run, threads == 2 ? 2 : 8) << what << ": an epilogue launch per block";
      const PlanShape s = plan_shape();
      EXPECT_EQ(s.blas, 1) << what;
      EXPECT_EQ(s.epilogues, 1) << what;
      EXPECT_EQ(s.kernels, 1) << what;
      EXPECT_EQ(s.other_eager, 0) << what << ": " << s.others;
      EXPECT_EQ(allocations, 1u) << what;
    }
}

// The transposed operands of a linear layer's forward and backward go to BLAS as flags: one
// allocation per product, no copy step.
TEST_F(JitMatmulTest, TransposedOperandsAreNotCopied) {
  ConfigOverride<int> nt(config().num_threads, 2);
  const Tensor x = testing::eager_normal({256, 192}, 4), w = testing::eager_normal({320, 192}, 5),
               g = testing::eager_normal({256, 320}, 6);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> cases = {
      {"x.matmul(w.t())", [&] { return x.matmul(w.t()); }},
      {"x.t().matmul(g)", [&] { return x.t().matmul(g); }},
      {"g.t().matmul(x)", [&] { return g.t().matmul(x); }},
      {"g.matmul(w)", [&] { return g.matmul(w); }},
      {"x.t().matmul(g.t().t())", [&] { return x.t().matmul(g.t().t()); }},
  };
  for (const auto& [what, f] : cases) {
    tracer::RegionCache::instance().clear();
    const uint64_t allocations = run_both([&](int) { return TensorList{f()}; }, what);
    const PlanShape s = plan_shape();
    EXPECT_EQ(s.blas, 1) << what;
    EXPECT_EQ(s.other_eager, 0) << what << ": " << s.others;
    EXPECT_EQ(allocations, 1u) << what;
  }
}

// Epilogues of several kinds and products that cannot run blocked, bitwise equal to eager on
// every ISA path with one and two threads.
TEST_F(JitMatmulTest, EpiloguesAndProductsOfEveryKindMatchEager) {
  const Tensor x = testing::eager_normal({256, 256}, 7), w = testing::eager_normal({256, 256}, 8),
               b = testing::eager_normal({256}, 9);
  const Tensor x3 = testing::eager_normal({4, 64, 256}, 10),
               xd = testing::eager_normal({128, 96}, 11, kFloat64),
               wd = testing::eager_normal({80, 96}, 12, kFloat64),
               bd = testing::eager_normal({80}, 13, kFloat64);
  const Tensor q = testing::eager_normal({4, 96, 64}, 14),
               k = testing::eager_normal({4, 96, 64}, 15);
  const std::vector<std::pair<std::string, std::function<TensorList()>>> cases = {
      {"residual", [&] { return TensorList{x + x.matmul(w) * 0.5}; }},
      {"gelu", [&] { return TensorList{gelu(x.matmul(w.t()) + b, "tanh")}; }},
      {"product read again",
       [&] {
         Tensor y = x.matmul(w);
         return TensorList{relu(y + b), y.sum({0})};
       }},
      {"product and epilogue outputs",
       [&] {
         Tensor y = x.matmul(w);
         return TensorList{y, (y * 2.0).relu()};
       }},
      {"float64", [&] { return TensorList{relu(linear(xd, wd, bd))}; }},
      {"3-d linear", [&] { return TensorList{relu(linear(x3, w, b))}; }},
      {"batched scores", [&] { return TensorList{(q.matmul(k.transpose(1, 2)) * 0.125).exp()}; }},
      {"epilogue broadcast wider", [&] { return TensorList{x3 + x.slice(0, 0, 64).matmul(w)}; }},
      {"product read transposed",  // a block's epilogue must not read rows of other blocks
       [&] {
         Tensor y = x.matmul(w);
         return TensorList{y + y.t() * 2.0};
       }},
  };
  for (const std::string& isa : testing::supported_jit_isas())
    for (int threads : {1, 2}) {
      ConfigOverride<std::string> isa_override(config().jit_isa, isa);
      ConfigOverride<int> nt(config().num_threads, threads);
      for (const auto& [what, f] : cases) {
        tracer::RegionCache::instance().clear();
        run_both([&](int) { return f(); },
                 what + ", " + isa + ", " + std::to_string(threads) + " threads");
        EXPECT_GE(plan_shape().blas, 1) << what;
      }
    }
}

// An epilogue whose result is written back into an operand of the product, in place: into the
// left one (x += relu(x @ w) * c, which row block i's GEMM reads only at rows i), and into the
// right one (w += relu(x @ w) * c, which every block's GEMM reads whole: the step must finish
// the GEMM before any epilogue writes); and the product itself written back into x (x = x @ w:
// never computed into x's memory, which the GEMM reads). Bitwise equal to eager, updated in
// their own storage.
TEST_F(JitMatmulTest, EpilogueWritingAnOperandMatchesEager) {
  ConfigOverride<int> nt(config().num_threads, 2);
  for (int into = 0; into < 3; ++into) {
    tracer::RegionCache::instance().clear();
    auto run = [&](bool jit) {
      Tensor x = testing::eager_normal({512, 512}, 16), w = testing::eager_normal({512, 512}, 17);
      Tensor& target = into == 1 ? w : x;
      const void* where = target.raw_data();
      JitMode mode(jit);
      for (int it = 0; it < 3; ++it) {
        if (into == 2)
          x.copy_(x.matmul(w));  // the product itself written back into its left operand
        else
          target.add_(relu(x.matmul(w)) * 0.0625);
        kiln::sync();
      }
      EXPECT_EQ(target.raw_data(), where);
      return target;
    };
    const Tensor want = run(false), got = run(true);
    expect_bitwise_equal(got, want, into == 0 ? "into x" : into == 1 ? "into w" : "x = x @ w");
  }
}

// Optimizer steps through the optim classes (recorded on their own: gradients set eagerly):
// momentum SGD and Adam over N parameters are at most N kernels and no eager step, every
// parameter and state written in place (no allocation once the state exists).
TEST_F(JitMatmulTest, OptimizerStepsOverNParametersAreAtMostNKernels) {
  const std::vector<std::vector<int64_t>> shapes = {{64, 33}, {33}, {17, 5, 3}, {1000}};
  for (int which = 0; which < 2; ++which) {
    tracer::RegionCache::instance().clear();
    auto train = [&](bool jit, uint64_t* allocations) {
      std::vector<Tensor> params;
      for (size_t i = 0; i < shapes.size(); ++i)
        params.push_back(testing::eager_normal(shapes[i], 30 + i).requires_grad_());
      std::vector<const void*> where;
      for (const Tensor& p : params) where.push_back(p.raw_data());
      std::unique_ptr<optim::Optimizer> opt;
      if (which == 0)
        opt = std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05).momentum(0.9));
      else
        opt = std::make_unique<optim::Adam>(params, optim::AdamOptions(0.01));
      for (int it = 0; it < 5; ++it) {
        {
          JitMode off(false);  // gradients made eagerly: the region is the step alone
          for (size_t i = 0; i < params.size(); ++i)
            params[i].mutable_grad() = testing::eager_normal(shapes[i], 100 * it + i);
        }
        JitMode mode(jit);
        kiln::sync();
        const uint64_t before = testing::cpu_allocations();
        opt->step();
        kiln::sync();
        if (it == 4) *allocations = testing::cpu_allocations() - before;
      }
      for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(params[i].raw_data(), where[i]);
      return params;
    };
    uint64_t eager_allocations = 0, jit_allocations = 0;
    const std::vector<Tensor> want = train(false, &eager_allocations);
    const std::vector<Tensor> got = train(true, &jit_allocations);
    const std::string what = which == 0 ? "SGD momentum" : "Adam";
    for (size_t i = 0; i < want.size(); ++i) expect_bitwise_equal(got[i], want[i], what.c_str());
    int kernels = 0, eager = 0;
    for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
      std::shared_ptr<tracer::RegionPlan> p = r->jit_plan();
      const auto* jp = dynamic_cast<const jit::JitPlan*>(p.get());
      if (jp == nullptr || r != tracer::RegionCache::instance().regions().back()) continue;
      kernels = jp->num_kernels();
      eager = jp->num_eager_steps();
    }
    EXPECT_GE(kernels, 1) << what;
    EXPECT_LE(kernels, static_cast<int>(shapes.size())) << what;
    EXPECT_EQ(eager, 0) << what;
    EXPECT_EQ(jit_allocations, 0u) << what << ": the step allocated";
  }
}

// Whole training steps (forward, backward, update in one region) of a 2-layer MLP with two
// micro-batches accumulated per step and zero_grad between steps, Adam and momentum SGD: the
// losses, parameters and gradients equal eager's bitwise at every step, one and two threads.
TEST_F(JitMatmulTest, TrainingStepsWithAccumulationAndZeroGradMatchEager) {
  for (int threads : {1, 2})
    for (int which = 0; which < 2; ++which) {
      ConfigOverride<int> nt(config().num_threads, threads);
      tracer::RegionCache::instance().clear();
      auto train = [&](bool jit) {
        std::vector<Tensor> params = {
            testing::eager_normal({256, 192}, 40).mul_(0.05).requires_grad_(),
            testing::eager_normal({256}, 41).mul_(0.1).requires_grad_(),
            testing::eager_normal({10, 256}, 42).mul_(0.05).requires_grad_(),
            testing::eager_normal({10}, 43).mul_(0.1).requires_grad_()};
        std::unique_ptr<optim::Optimizer> opt;
        if (which == 0)
          opt = std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05).momentum(0.9));
        else
          opt = std::make_unique<optim::Adam>(params, optim::AdamOptions(0.01));
        TensorList record;
        JitMode mode(jit);
        for (int step = 0; step < 4; ++step) {
          opt->zero_grad();
          for (int micro = 0; micro < 2; ++micro) {
            Tensor x = testing::eager_normal({128, 192}, 50 + 2 * step + micro);
            Tensor target;
            {
              JitMode off(false);
              manual_seed(60 + step);
              target = randint(0, 10, {128});
            }
            Tensor h = relu(linear(x, params[0], params[1]));
            Tensor loss = cross_entropy(linear(h, params[2], params[3]), target);
            loss.backward();
            record.push_back(loss.detach());
          }
          for (const Tensor& p : params) record.push_back(p.grad().clone());
          opt->step();
          for (const Tensor& p : params) record.push_back(p.detach().clone());
          kiln::sync();
        }
        return record;
      };
      const TensorList want = train(false), got = train(true);
      testing::expect_lists_bitwise_equal(
          got, want, (which == 0 ? "SGD, " : "Adam, ") + std::to_string(threads) + " threads");
      EXPECT_GE(plan_shape().blas, 1);
    }
}

// A 3-layer MLP step with plain SGD (kiln-perf's mlp_train, smaller): the optimizer's
// `w - lr * dW` kernels are recorded after the whole backward, and move up to run as the
// epilogues of their weight gradients' BLAS steps (jit/plan/planner.cpp) where everything they
// read is ready: every split dW gets its update as an epilogue. A kernel that reads a product and
// a value computed later stays where it is. Bitwise equal to eager at every step, one, two and
// sixteen threads (an update per tile of its gradient: blas::AfterBlock).
TEST_F(JitMatmulTest, SgdUpdatesRecordedLateBecomeEpiloguesOfTheirGradients) {
  for (int threads : {1, 2, 16}) {
    ConfigOverride<int> nt(config().num_threads, threads);
    tracer::RegionCache::instance().clear();
    auto train = [&](bool jit) {
      std::vector<Tensor> params;
      const int64_t widths[] = {192, 512, 512, 10};
      for (int l = 0; l < 3; ++l) {
        params.push_back(
            testing::eager_normal({widths[l + 1], widths[l]}, 70 + l).mul_(0.05).requires_grad_());
        params.push_back(testing::eager_normal({widths[l + 1]}, 80 + l).mul_(0.1).requires_grad_());
      }
      optim::SGD opt(params, optim::SGDOptions(0.01));
      const Tensor x = testing::eager_normal({256, 192}, 90);
      Tensor target;
      {
        JitMode off(false);
        manual_seed(91);
        target = randint(0, 10, {256});
      }
      TensorList record;
      JitMode mode(jit);
      for (int step = 0; step < 3; ++step) {
        opt.zero_grad();
        Tensor h = relu(linear(x, params[0], params[1]));
        h = relu(linear(h, params[2], params[3]));
        Tensor loss = cross_entropy(linear(h, params[4], params[5]), target);
        loss.backward();
        opt.step();
        record.push_back(loss.detach());
        for (const Tensor& p : params) record.push_back(p.grad().clone());
        for (const Tensor& p : params) record.push_back(p.detach().clone());
        kiln::sync();
      }
      return record;
    };
    const TensorList want = train(false), got = train(true);
    testing::expect_lists_bitwise_equal(got, want, std::to_string(threads) + " threads");
    if (threads == 2) {
      // The three forward products with their bias (+ relu), and the three weight gradients
      // with their updates (5 epilogues: 3 without the move, only dW1's update is next to it).
      const PlanShape s = plan_shape();
      EXPECT_GE(s.epilogues, 5) << s.blas << " BLAS steps";
    }
  }
  // Not hoisted past a value it needs: `a + b` reads the first product and the second one.
  tracer::RegionCache::instance().clear();
  const Tensor x = testing::eager_normal({256, 512}, 92), w = testing::eager_normal({512, 512}, 93),
               v = testing::eager_normal({512, 512}, 94);
  run_both(
      [&](int) {
        return TensorList{x.matmul(w) * 2.0, (x.matmul(w) + x.matmul(v)).relu()};
      },
      "two products");
}

// Random products and epilogues (a small differential fuzzer): sizes around the split's
// threshold, random transposes of either operand, an epilogue drawn from bias, activations,
// scaling, a residual and a second reader of the product; Float32 and Float64; two threads (row
// blocks with the epilogue per block) and sixteen (libxsmm's tiles or column blocks over kiln's
// threads, the epilogue per tile: blas::AfterBlock); bitwise equal to eager. KILN_FUZZ_SEEDS
// sets the count (default 40).
TEST_F(JitMatmulTest, RandomProductsAndEpiloguesMatchEager) {
  const char* env = std::getenv("KILN_FUZZ_SEEDS");
  const int seeds = env != nullptr ? std::atoi(env) : 40;
  for (int seed = 0; seed < seeds; ++seed) {
    ConfigOverride<int> nt(config().num_threads, seed % 2 == 0 ? 2 : 16);
    std::mt19937 rng(1400 + seed);
    // On 16 threads up to 600: most products then pass kColSplitMaxMnk and take libxsmm's tiles.
    const uint32_t most = config().num_threads == 16 ? 600 : 300;
    const int64_t M = 1 + rng() % most, N = 1 + rng() % most, K = 1 + rng() % most;
    const bool ta = rng() % 2, tb = rng() % 2;
    const DType dt = rng() % 4 == 0 ? kFloat64 : kFloat32;
    const int epilogue = static_cast<int>(rng() % 7);
    const Tensor a = ta ? testing::eager_normal({K, M}, 3 * seed, dt).t()
                        : testing::eager_normal({M, K}, 3 * seed, dt);
    const Tensor b = tb ? testing::eager_normal({N, K}, 3 * seed + 1, dt).t()
                        : testing::eager_normal({K, N}, 3 * seed + 1, dt);
    const Tensor bias = testing::eager_normal({N}, 3 * seed + 2, dt),
                 res = testing::eager_normal({M, N}, 3 * seed + 2, dt);
    auto program = [&](int) {
      Tensor y = a.matmul(b);
      switch (epilogue) {
        case 0:
          return TensorList{y};
        case 1:
          return TensorList{y + bias};
        case 2:
          return TensorList{relu(y + bias)};
        case 3:
          return TensorList{gelu(y * 0.125 + bias, "tanh")};
        case 4:
          return TensorList{res + y * 0.5};
        case 5:
          return TensorList{tanh(y), y.sum({1})};
        default:
          return TensorList{y, sigmoid(y - bias)};
      }
    };
    tracer::RegionCache::instance().clear();
    run_both(program, fmt::format("seed {}: {}x{}x{} ta {} tb {} {} epilogue {}, {} threads", seed,
                                  M, N, K, ta, tb, dtype_name(dt), epilogue, config().num_threads));
  }
}

}  // namespace
}  // namespace kiln
