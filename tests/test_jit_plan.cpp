// The JIT's planner and plans end to end, through the recorder: how regions split into fused
// kernels and eager steps (counted on the region cache's plans), results bitwise equal to eager
// (in-place updates of leaves written straight into their storage, views and transposes as kernel
// inputs, broadcasting, Float64, promoted runtime scalars with no replanning, a second batch size
// with no new plan), an injected codegen fault while planning, KILN_JIT_VALIDATE, and every ISA
// path.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/plan/jit_plan.h"
#include "jit/plan/planner.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "log_capture.h"
#include "ops/cpu/elementwise_loop.h"
#include "record_util.h"
#include "runtime/allocator.h"
#include "runtime/logging.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

using testing::ConfigOverride;
using testing::expect_bitwise_equal;
using testing::expect_iterations_match;
using testing::JitMode;
using testing::JitRestore;

// Every test plans synchronously, at first sight, from an empty region cache.
class JitPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kiln::sync();
    config().jit = false;  // eager outside the tests' JitMode(true) blocks, in either test pass
    tracer::wait_for_compiles();
    tracer::RegionCache::instance().clear();
  }
  void TearDown() override { tracer::wait_for_compiles(); }
  JitRestore restore_;
  ConfigOverride<bool> sync_planning_{config().jit_async, false};
  ConfigOverride<int> threshold_{config().jit_threshold, -1};
};

// The JIT plans of every region in the cache (null where a region has none).
std::vector<const jit::JitPlan*> jit_plans(std::vector<std::shared_ptr<tracer::RegionPlan>>* keep) {
  std::vector<const jit::JitPlan*> out;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    std::shared_ptr<tracer::RegionPlan> p = r->jit_plan();
    out.push_back(dynamic_cast<const jit::JitPlan*>(p.get()));
    keep->push_back(std::move(p));
  }
  return out;
}

// The one region the cache holds, and its JIT plan (failing the test otherwise).
struct OnePlan {
  std::vector<std::shared_ptr<tracer::RegionPlan>> keep;
  const jit::JitPlan* plan = nullptr;
  const tracer::CachedRegion* region = nullptr;
};
OnePlan the_plan() {
  OnePlan o;
  const auto regions = tracer::RegionCache::instance().regions();
  EXPECT_EQ(regions.size(), 1u);
  if (regions.empty()) return o;
  o.region = regions.back();
  std::vector<const jit::JitPlan*> plans = jit_plans(&o.keep);
  o.plan = plans.back();
  EXPECT_NE(o.plan, nullptr) << "the region has no JIT plan";
  return o;
}

// The kernel steps' fused node counts, in step order ("k3 e k2": a kernel of 3 nodes, an eager
// step, a kernel of 2 nodes).
std::string step_string(const jit::JitPlan& p) {
  std::string s;
  for (const jit::Step& st : p.steps()) {
    if (!s.empty()) s += ' ';
    s += st.kernel ? fmt::format("k{}", st.kernel->nodes.size()) : std::string("e");
  }
  return s;
}

// ((x * w + b) * 0.5).relu() - x with w and b broadcast over the rows: one kernel.
// A clone of an in-place result is not replaced by that result where a view reads the clone:
// the plan computes relu_'s result straight into the user's strided memory (half of a [4, 4, 4]
// leaf), and the transpose of the clone that maximum's backward reads, recorded as as_strided
// over the clone's row-major buffer, read other elements there (passes/simplify.cpp,
// may_bypass). Found by RecordFuzz.ScalarVariants (recorded-pass seed 12253212).
TEST_F(JitPlanTest, ACloneOfAnInPlaceResultKeepsItsOwnBufferForItsViews) {
  std::vector<float> v(64);
  for (int i = 0; i < 64; ++i) v[i] = static_cast<float>((i * 7) % 9) - 4.0f;
  expect_iterations_match(
      [&](int) {
        Tensor t1 = from_vector(v, {4, 4, 4});
        kiln::sync();
        Tensor t5 = split(t1, 2, 1)[0];  // [4, 2, 4], strides [16, 4, 1]
        t5.relu_();                      // written back into t1's memory
        Tensor x = t5.detach().clone().requires_grad_();
        sum(maximum(x, x.transpose(0, 2))).backward();
        return TensorList{x.grad(), t1};
      },
      3, "clone of relu_ read transposed");
}

TEST_F(JitPlanTest, PointwiseChainWithBroadcastIsOneKernel) {
  for (DType dtype : {kFloat32, kFloat64}) {
    tracer::RegionCache::instance().clear();
    const Tensor x = testing::eager_normal({33, 47}, 1, dtype),
                 w = testing::eager_normal({47}, 2, dtype),
                 b = testing::eager_normal({1, 47}, 3, dtype);
    expect_iterations_match([&](int) { return TensorList{((x * w + b) * 0.5).relu() - x}; }, 3,
                            std::string(dtype_name(dtype)));
    OnePlan p = the_plan();
    ASSERT_NE(p.plan, nullptr);
    EXPECT_EQ(p.plan->num_kernels(), 1) << step_string(*p.plan);
    EXPECT_EQ(p.plan->num_eager_steps(), 0) << step_string(*p.plan);
    EXPECT_EQ(step_string(*p.plan), "k5");
    EXPECT_EQ(p.plan->steps()[0].kernel->kernel->source().output_dtype(0), dtype);
    EXPECT_EQ(p.plan->steps()[0].kernel->outputs.size(), 1u) << "only the result is stored";
  }
}

// A DAG (values read twice, two results) still fuses into one kernel with two stores.
TEST_F(JitPlanTest, PointwiseDagWithTwoResultsIsOneKernel) {
  const Tensor x = testing::eager_normal({5, 300}, 4), y = testing::eager_normal({300}, 5);
  expect_iterations_match(
      [&](int) {
        Tensor a = x * y;
        Tensor b = (a + 1.0).abs().sqrt();
        Tensor c = kiln::maximum(a, b).clamp(-0.5, 2.0) / (b + 3.0);
        return TensorList{c, -b.square()};
      },
      3, "dag");
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  EXPECT_EQ(p.plan->num_kernels(), 1) << step_string(*p.plan);
  EXPECT_EQ(p.plan->num_eager_steps(), 0);
  EXPECT_EQ(p.plan->steps()[0].kernel->outputs.size(), 2u);
}

// An op no kernel computes in the middle (tril: an eager step): kernel, eager step, kernel
// (never declined as a whole). (A column argmax was this test's op until it became a column
// kernel: ArgmaxArgminOverColumnsAreOnePassColumnKernels.)
TEST_F(JitPlanTest, UnsupportedOpSplitsTheRegion) {
  const Tensor x = testing::eager_normal({16, 70}, 6);
  expect_iterations_match(
      [&](int) {
        Tensor s = (x * 2.0 + 1.0).tril(1);
        return TensorList{((x - s) * 3.0).relu()};
      },
      3, "split");
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  EXPECT_EQ(step_string(*p.plan), "k2 e k3");
  EXPECT_EQ(p.plan->num_kernels(), 2);
  EXPECT_EQ(p.plan->num_eager_steps(), 1);
}

// A pointwise kernel whose input is transposed against its output (the input's innermost stride
// a line or more, the next dim's smaller) launches in tiles of ElementwiseLoop's shape
// (cpu_kernel.cpp): every element where the index map puts it, eager's bits, partial tiles, an
// outer dim, a contiguous operand beside it and a cast; Float32, Float64 and Int32; 1 and 2
// threads. Shortening a tile's columns fails it.
TEST_F(JitPlanTest, TransposedInputsLaunchInTiles) {
  const int64_t A = 3, B = 2 * ElementwiseLoop::kTileRows + 37,
                C = 3 * ElementwiseLoop::kTileCols + 5;
  for (DType dt : {kFloat32, kFloat64, kInt32}) {
    for (int threads : {1, 2}) {
      ConfigOverride<int> t(config().num_threads, threads);
      tracer::RegionCache::instance().clear();
      const Tensor x = (testing::eager_normal({A, B, C}, 8) * 100.0).to(dt);
      const Tensor y = (testing::eager_normal({A, C, B}, 9) * 100.0).to(dt);
      expect_iterations_match(
          [&](int) {
            const Tensor p = x.permute({0, 2, 1});
            return TensorList{p * 2 + 1, (p + y).to(kFloat64)};
          },
          2, fmt::format("{} threads {}", dtype_name(dt), threads));
      OnePlan o = the_plan();
      ASSERT_NE(o.plan, nullptr);
      EXPECT_EQ(o.plan->num_eager_steps(), 0) << step_string(*o.plan);
    }
  }
}

// Comparisons, where and random numbers run eagerly between fused kernels.
TEST_F(JitPlanTest, ComparisonsWhereAndRandomInterleave) {
  const Tensor x = testing::eager_normal({9, 40}, 7);
  expect_iterations_match(
      [&](int it) {
        manual_seed(100 + it);
        Tensor a = (x * 1.5 - 0.25).relu();
        Tensor r = rand({9, 40});
        Tensor m = where(a > r, a * 2.0, r - 1.0);
        return TensorList{(m + x).neg(), a};
      },
      3, "where/rand");
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  // rand is a RandUniform expression and the comparison a mask inlined into the where (no Bool
  // tensor is made): the relu chain, a * 2, rand, r - 1, the comparison, where and the rest are
  // one kernel.
  EXPECT_EQ(step_string(*p.plan), "k10") << step_string(*p.plan);
}

// Every dtype in one kernel: a comparison stored as Bool, Int32 arithmetic cast to Float32, a
// where on a loaded Bool mask broadcast over the rows, floor, a logical op; each output has its
// own dtype (the Bool outputs are bytes 0 / 1, compared bitwise with eager).
TEST_F(JitPlanTest, CastsComparisonsIntegersAndBoolMasksFuseIntoOneKernel) {
  Tensor x, i, m;
  {
    JitMode off(false);
    x = testing::eager_normal({9, 40}, 21);
    i = (testing::eager_normal({9, 40}, 22) * 1000.0).to(kInt32);
    m = testing::eager_normal({40}, 23) > 0.0;
  }
  expect_iterations_match(
      [&](int) {
        Tensor y = (i * 3 + 1).to(kFloat32);
        Tensor mask = y > x;
        return TensorList{mask, where(m, y, x).floor(), logical_and(mask, m)};
      },
      3, "typed");
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  EXPECT_EQ(step_string(*p.plan), "k7");
  const jit::LoopKernel& k = p.plan->steps()[0].kernel->kernel->source();
  ASSERT_EQ(k.num_outputs(), 3);
  EXPECT_EQ(k.output_dtype(0), kBool);
  EXPECT_EQ(k.output_dtype(1), kFloat32);
  EXPECT_EQ(k.output_dtype(2), kBool);
}

// An optimizer step over parameters of several shapes, written with in-place pointwise ops on
// leaves (parameter p, gradient g, state m and v), run 4 times eagerly and recorded: results
// bitwise equal, every parameter updated in its own storage; returns the plan's step string.
using UpdateFn = std::function<void(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, int it)>;
std::string check_optimizer(const UpdateFn& update, int* kernels, int* eager,
                            uint64_t* allocations = nullptr) {
  const std::vector<std::vector<int64_t>> shapes = {{64, 33}, {33}, {17, 5, 3}, {1000}, {7, 1}};
  struct State {
    std::vector<Tensor> p, g, m, v;
  };
  auto make = [&] {
    JitMode off(false);  // the state is made eagerly, in either test pass
    State st;
    for (size_t i = 0; i < shapes.size(); ++i) {
      st.p.push_back(testing::eager_normal(shapes[i], 10 + 4 * i));
      st.g.push_back(testing::eager_normal(shapes[i], 11 + 4 * i));
      st.m.push_back(testing::eager_normal(shapes[i], 12 + 4 * i) * 0.01);
      st.v.push_back(testing::eager_normal(shapes[i], 13 + 4 * i).abs());
    }
    return st;
  };
  State e = make(), j = make();
  std::vector<const void*> storage;
  for (const Tensor& p : j.p) storage.push_back(p.raw_data());
  auto step = [&](State& st, int it) {
    for (size_t i = 0; i < shapes.size(); ++i) update(st.p[i], st.g[i], st.m[i], st.v[i], it);
  };
  {
    JitMode off(false);
    for (int it = 0; it < 4; ++it) step(e, it);
  }
  {
    JitMode on(true);
    for (int it = 0; it < 4; ++it) {
      if (it == 3 && allocations != nullptr) *allocations = testing::cpu_allocations();
      step(j, it);
      kiln::sync();
      if (it == 3 && allocations != nullptr)
        *allocations = testing::cpu_allocations() - *allocations;
    }
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    expect_bitwise_equal(j.p[i], e.p[i], "parameter");
    expect_bitwise_equal(j.m[i], e.m[i], "state m");
    expect_bitwise_equal(j.v[i], e.v[i], "state v");
    EXPECT_EQ(j.p[i].raw_data(), storage[i]) << "parameter " << i << " moved";
  }
  OnePlan p = the_plan();
  if (p.plan == nullptr) return "(no plan)";
  *kernels = p.plan->num_kernels();
  *eager = p.plan->num_eager_steps();
  return step_string(*p.plan);
}

// SGD with weight decay: one kernel per parameter, no eager step.
TEST_F(JitPlanTest, SgdStepFusesPerParameterAndWritesInPlace) {
  int kernels = 0, eager = 0;
  const std::string steps = check_optimizer(
      [](Tensor& p, const Tensor& g, Tensor&, Tensor&, int) { p.sub_((g + p * 1e-4) * 0.05); },
      &kernels, &eager);
  EXPECT_EQ(kernels, 5) << steps;
  EXPECT_EQ(eager, 0) << steps;
}

// Momentum and Adam, correct but not fused per parameter.
TEST_F(JitPlanTest, MomentumAndAdamStepsMatchEager) {
  int kernels = 0, eager = 0;
  check_optimizer(
      [](Tensor& p, const Tensor& g, Tensor& m, Tensor&, int) {
        m.mul_(0.9).add_(g + p * 1e-4);
        p.sub_(m * 0.05);
      },
      &kernels, &eager);
  tracer::RegionCache::instance().clear();
  check_optimizer(
      [](Tensor& p, const Tensor& g, Tensor& m, Tensor& v, int it) {
        m.mul_(0.9).add_(g * 0.1);
        v.mul_(0.999).add_(g.square() * 0.001);
        const double c1 = 1.0 - std::pow(0.9, it + 1), c2 = 1.0 - std::pow(0.999, it + 1);
        p.sub_((m / c1) / ((v / c2).sqrt() + 1e-8) * 0.001);
      },
      &kernels, &eager);
  EXPECT_GE(kernels, 5);
}

// A momentum or Adam step is one kernel per parameter: `m.mul_(0.9).add_(g * 0.1)` joins the
// groups of its two products (jit/plan/planner.cpp merges producer groups of the node's shape).
TEST_F(JitPlanTest, MomentumAndAdamStepsFusePerParameter) {
  int kernels = 0, eager = 0;
  uint64_t allocations = 0;
  std::string steps = check_optimizer(
      [](Tensor& p, const Tensor& g, Tensor& m, Tensor&, int) {
        m.mul_(0.9).add_(g + p * 1e-4);
        p.sub_(m * 0.05);
      },
      &kernels, &eager, &allocations);
  EXPECT_EQ(kernels, 5) << "momentum: " << steps;
  EXPECT_EQ(eager, 0) << steps;
  EXPECT_EQ(allocations, 0u) << "momentum writes every parameter and state in place";
  tracer::RegionCache::instance().clear();
  steps = check_optimizer(
      [](Tensor& p, const Tensor& g, Tensor& m, Tensor& v, int) {
        m.mul_(0.9).add_(g * 0.1);
        v.mul_(0.999).add_(g.square() * 0.001);
        p.sub_(m / (v.sqrt() + 1e-8) * 0.001);
      },
      &kernels, &eager, &allocations);
  EXPECT_EQ(kernels, 5) << "adam: " << steps;
  EXPECT_EQ(eager, 0) << steps;
  EXPECT_EQ(allocations, 0u) << "Adam writes every parameter and state in place";
}

// Destinations: the fused kernel writes the leaf's own storage (no temporary and copy), also for
// a non-contiguous leaf.
TEST_F(JitPlanTest, InPlaceUpdateOfTransposedLeaf) {
  const Tensor base_e = testing::eager_normal({40, 24}, 20),
               base_j = testing::eager_normal({40, 24}, 20),
               g = testing::eager_normal({24, 40}, 21);
  Tensor pe = base_e.t(), pj = base_j.t();  // non-contiguous leaves
  const void* where_before = pj.raw_data();
  auto step = [&](Tensor& p) { p.add_((g.relu() * 0.25 - p) * 0.5); };
  {
    JitMode off(false);
    for (int it = 0; it < 3; ++it) step(pe);
  }
  {
    JitMode on(true);
    for (int it = 0; it < 3; ++it) {
      step(pj);
      kiln::sync();
    }
  }
  expect_bitwise_equal(pj, pe, "transposed leaf");
  expect_bitwise_equal(base_j, base_e, "its base");
  EXPECT_EQ(pj.raw_data(), where_before);
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  EXPECT_EQ(p.plan->num_kernels(), 1) << step_string(*p.plan);
}

// Views, transposes and slices of inputs feed kernels; broadcasting in both directions.
TEST_F(JitPlanTest, ViewsAndTransposesAsKernelInputs) {
  const Tensor x = testing::eager_normal({30, 30}, 30), y = testing::eager_normal({30, 1}, 31),
               z = testing::eager_normal({60, 95}, 32);
  expect_iterations_match(
      [&](int) {
        Tensor a = x.t() * 2.0 + x;                           // a transposed input
        Tensor b = z.slice(0, 3, 33).slice(1, 5, 35) - y;     // an offset, strided view
        Tensor c = z.slice(1, 0, 90, 3).slice(0, 0, 30) / a;  // a gapped view
        return TensorList{(a * b).relu() + c, x.t().square()};
      },
      3, "views");
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  EXPECT_GE(p.plan->num_kernels(), 1) << step_string(*p.plan);
}

// A scalar that changes every iteration (a learning-rate schedule) is promoted to a kernel
// parameter: right values on every iteration, and one plan once it is promoted.
TEST_F(JitPlanTest, PromotedScalarsChangeEveryIterationWithoutReplanning) {
  for (DType dtype : {kFloat32, kFloat64}) {
    tracer::RegionCache::instance().clear();
    const Tensor g = testing::eager_normal({50, 20}, 40, dtype);
    const Tensor p0 = testing::eager_normal({50, 20}, 41, dtype);
    Tensor pe = p0.clone(), pj = p0.clone();
    auto lr = [](int it) { return 0.1 / (1.0 + it) + (it % 3 == 0 ? 1e-9 : 0.0); };
    const int n = 12;
    std::vector<Tensor> want;
    {
      JitMode off(false);
      for (int it = 0; it < n; ++it) {
        pe.sub_((g + pe * (lr(it) * 0.01)) * lr(it));
        want.push_back(pe.clone());
      }
    }
    std::shared_ptr<tracer::RegionPlan> first;
    int64_t kernels_at_3 = 0;
    {
      JitMode on(true);
      for (int it = 0; it < n; ++it) {
        pj.sub_((g + pj * (lr(it) * 0.01)) * lr(it));
        kiln::sync();
        expect_bitwise_equal(pj, want[it], ("iteration " + std::to_string(it)).c_str());
        const auto regions = tracer::RegionCache::instance().regions();
        ASSERT_EQ(regions.size(), 1u) << "iteration " << it;
        if (it == 2) {
          first = regions[0]->jit_plan();
          kernels_at_3 = jit::cpu_jit_counters().kernels.load();
          ASSERT_NE(first, nullptr);
        }
        if (it > 2) {
          EXPECT_EQ(regions[0]->jit_plan(), first) << "replanned at iteration " << it;
        }
      }
    }
    EXPECT_EQ(jit::cpu_jit_counters().kernels.load(), kernels_at_3) << "new kernels rendered";
    OnePlan p = the_plan();
    ASSERT_NE(p.plan, nullptr);
    EXPECT_EQ(p.plan->num_kernels(), 1) << step_string(*p.plan);
    EXPECT_GE(p.plan->steps()[0].kernel->params.size(), 1u) << "the scalars are parameters";
  }
}

// A second batch size runs the same plan: no new region, no new plan.
TEST_F(JitPlanTest, SecondBatchSizeReusesThePlan) {
  const Tensor w = testing::eager_normal({64}, 50), b = testing::eager_normal({64}, 51);
  auto body = [&](const Tensor& x) { return ((x * w + b) * 0.5).relu() - x; };
  const Tensor x8 = testing::eager_normal({8, 64}, 52), x13 = testing::eager_normal({13, 64}, 53),
               x200 = testing::eager_normal({200, 64}, 54);
  expect_iterations_match([&](int) { return TensorList{body(x8)}; }, 2, "batch 8");
  const auto regions = tracer::RegionCache::instance().regions();
  ASSERT_EQ(regions.size(), 1u);
  const std::shared_ptr<tracer::RegionPlan> plan = regions[0]->jit_plan();
  ASSERT_NE(plan, nullptr);
  expect_iterations_match([&](int) { return TensorList{body(x13)}; }, 2, "batch 13");
  expect_iterations_match([&](int) { return TensorList{body(x200)}; }, 2, "batch 200");
  EXPECT_EQ(tracer::RegionCache::instance().regions().size(), 1u) << "a new region";
  EXPECT_EQ(regions[0]->jit_plan(), plan) << "a new plan";
}

// A codegen fault while planning: that kernel's nodes run as eager steps, the rest stays fused,
// the results are right, and the planner warns once.
TEST_F(JitPlanTest, InjectedCodegenFaultLeavesEagerStepsAndOneWarning) {
  testing::JitLog log;  // removed at any return (an ASSERT's too)
  const Tensor x = testing::eager_normal({12, 90}, 60);
  // Constants no other test uses: these kernels are rendered (not found in the kernel cache).
  auto program = [&](int) {
    Tensor s = (x * 0.3046875 + 1.0).argmax(0, true);  // over columns: eager
    return TensorList{((x - s) * 0.6015625).relu()};
  };
  jit::rearm_codegen_warning();  // another test may have failed a compile first
  jit::inject_cpu_codegen_faults(1);
  expect_iterations_match(program, 3, "fault");
  jit::inject_cpu_codegen_faults(0);
  {
    OnePlan p = the_plan();
    ASSERT_NE(p.plan, nullptr);
    EXPECT_EQ(p.plan->num_kernels(), 1) << step_string(*p.plan);
    EXPECT_EQ(step_string(*p.plan), "e e e k3");  // the first kernel's two nodes stay eager
  }
  // Another region with another fault: still one warning.
  tracer::RegionCache::instance().clear();
  auto program2 = [&](int) {
    Tensor s = (x * 0.2421875 - 1.0).argmax(0, true);
    return TensorList{((x + s) * 0.1171875).abs()};
  };
  jit::inject_cpu_codegen_faults(1);
  expect_iterations_match(program2, 3, "fault 2");
  jit::inject_cpu_codegen_faults(0);
  const std::string text = log.text();
  size_t warnings = 0;
  for (size_t at = text.find("failed; they run eagerly"); at != std::string::npos;
       at = text.find("failed; they run eagerly", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << text;
}

// KILN_JIT_VALIDATE: correct kernels pass the check.
TEST_F(JitPlanTest, ValidatePassesOnCorrectKernels) {
  ConfigOverride<bool> validate(config().jit_validate, true);
  const Tensor x = testing::eager_normal({20, 33}, 70), w = testing::eager_normal({33}, 71);
  const Tensor xd = testing::eager_normal({7, 9}, 72, kFloat64);
  expect_iterations_match(
      [&](int it) {
        Tensor s = (x * w).sum();
        return TensorList{((x * w + 0.5 * it) * 0.5).relu() - x, (x - s).abs(),
                          (xd * (1.0 + it)).square() - xd};
      },
      4, "validate");
  EXPECT_FALSE(tracer::RegionCache::instance().regions().empty());
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions())
    EXPECT_NE(r->jit_plan(), nullptr);
}

// The same programs on every ISA path, each planned afresh.
TEST_F(JitPlanTest, EveryIsaPath) {
  const Tensor x = testing::eager_normal({37, 29}, 80), w = testing::eager_normal({29}, 81),
               xd = testing::eager_normal({5, 77}, 82, kFloat64);
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    tracer::RegionCache::instance().clear();
    expect_iterations_match(
        [&](int) {
          Tensor a = ((x * w + 1.0) * 0.5).relu() - x;
          Tensor s = a.sum();
          return TensorList{(a - s).clamp(-1.0, 1.0), kiln::minimum(xd.t(), xd.t() * 0.5)};
        },
        3, isa);
    OnePlan p = the_plan();
    ASSERT_NE(p.plan, nullptr);
    // a; the sum of a with (a - s).clamp, a row kernel of its own (w broadcasts inside its two
    // reduced dims, a row the CPU target does not render, so it cannot join a's kernel); minimum.
    EXPECT_EQ(p.plan->num_kernels(), 3) << isa << ": " << step_string(*p.plan);
    EXPECT_EQ(step_string(*p.plan), "k5 k3 k2") << isa;
  }
}

// In-place updates whose operand is another view of the destination's storage: eager computes
// into a temporary first (dispatcher.cpp, overlaps_differently), so must the plan.
TEST_F(JitPlanTest, InPlaceUpdateReadingAnotherViewOfItself) {
  auto run = [&](bool jit) {
    Tensor p = testing::eager_normal({48, 48}, 95);
    Tensor q = testing::eager_normal({64, 64}, 96);
    JitMode mode(jit);
    for (int it = 0; it < 3; ++it) {
      p.add_(p.t() * 0.5);                              // transposed self
      q.slice(0, 1, 64).mul_(q.slice(0, 0, 63) + 1.0);  // shifted rows of self
      kiln::sync();
    }
    return TensorList{p, q};
  };
  const TensorList want = run(false);
  const TensorList got = run(true);
  testing::expect_lists_bitwise_equal(got, want, "self-overlapping in-place");
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  EXPECT_GE(p.plan->num_kernels(), 2) << step_string(*p.plan);
}

// Regression: a fused chain of 20 ops whose scalars change every iteration makes one kernel
// with 20 parameters; past the 16th the launch used to pass garbage (JitCpuKernels.
// MoreThanSixteenParams).
TEST_F(JitPlanTest, ManyPromotedScalarsInOneKernel) {
  const Tensor x = testing::eager_normal({4, 50}, 90);
  expect_iterations_match(
      [&](int it) {
        Tensor y = x;
        for (int k = 0; k < 20; ++k) y = k % 2 ? y * (1.0 + 0.01 * (k + it)) : y + (0.5 * k + it);
        return TensorList{y};
      },
      4, "20 promoted scalars");
  OnePlan p = the_plan();
  ASSERT_NE(p.plan, nullptr);
  EXPECT_EQ(p.plan->num_kernels(), 1);
}

// gelu written out of primitives (as BENCHMARKS.md's workload) is one kernel, and a run allocates
// one buffer: its result.
TEST_F(JitPlanTest, GeluFromPrimitivesIsOneKernelAndOneBuffer) {
  const Tensor x = testing::eager_normal({1000, 37}, 93);
  auto program = [&](int) {
    Tensor inner = (x + 0.044715 * x * x * x) * 0.79788456;
    return TensorList{0.5 * x * (1.0 + tanh(inner))};
  };
  expect_iterations_match(program, 3, "gelu");
  OnePlan plan = the_plan();
  ASSERT_NE(plan.plan, nullptr);
  EXPECT_EQ(step_string(*plan.plan), "k9");
  JitMode on(true);
  const uint64_t before = testing::cpu_allocations();
  TensorList got = program(0);
  kiln::sync();
  EXPECT_EQ(testing::cpu_allocations() - before, 1u) << "buffers allocated by one gelu run";
}

// Buffers reused by liveness: a kernel writes its result into the buffer of an input that dies at
// it, and an elementwise eager step does the same (as the interpreter does), so a chain of steps
// allocates only what it must. Counted with the allocator's statistics over one warm run.
TEST_F(JitPlanTest, DeadBuffersAreReusedByKernelsAndEagerSteps) {
  const Tensor x = testing::eager_normal({64, 300}, 91) > 0.0,
               b = testing::eager_normal({64, 300}, 92) > 0.5;
  auto program = [&](int) {
    Tensor y = logical_not(x);            // kernel: a new buffer
    Tensor s = y.prod(IntList{0}, true);  // the same kernel (over columns): a new small one
    Tensor z = (y - s) < -30;             // next kernel: y dies here ...
    Tensor p = z + b;                     // ... and p takes y's buffer
    return TensorList{p};
  };
  expect_iterations_match(program, 3, "reuse");
  OnePlan plan = the_plan();
  ASSERT_NE(plan.plan, nullptr);
  EXPECT_EQ(step_string(*plan.plan), "k2 k4");
  JitMode on(true);
  {
    TensorList warm = program(0);
    kiln::sync();
  }
  uint64_t before = testing::cpu_allocations();
  TensorList got = program(0);
  kiln::sync();
  EXPECT_EQ(testing::cpu_allocations() - before, 2u) << "buffers allocated in one run";

  // A kernel whose codegen fails runs its nodes as eager steps: each writes into the buffer of
  // an input that dies at it (every op here computes in a kernel otherwise, Bool arithmetic
  // included: the fault is what makes the steps eager).
  tracer::RegionCache::instance().clear();
  const Tensor f = testing::eager_normal({64, 300}, 93);
  auto chain = [&](int) {
    Tensor a = sqrt(exp(f * 0.2109375) + 1.0);  // four eager steps: one new buffer
    Tensor t = a.tril(1);                       // an eager step (not elementwise): a new buffer
    return TensorList{(t * 3.0).relu()};        // a kernel: t's buffer
  };
  jit::rearm_codegen_warning();
  jit::inject_cpu_codegen_faults(1);
  expect_iterations_match(chain, 3, "declined chain");
  jit::inject_cpu_codegen_faults(0);
  OnePlan declined = the_plan();
  ASSERT_NE(declined.plan, nullptr);
  EXPECT_EQ(step_string(*declined.plan), "e e e e e k2");
  {
    TensorList warm = chain(0);
    kiln::sync();
  }
  before = testing::cpu_allocations();
  got = chain(0);
  kiln::sync();
  EXPECT_EQ(testing::cpu_allocations() - before, 2u) << "buffers allocated by the declined chain";
}

}  // namespace
}  // namespace kiln
