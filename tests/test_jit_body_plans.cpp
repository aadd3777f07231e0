// Bodies of higher-order nodes planned as regions of their own (jit/plan/body_plans.h): a region
// called as N layers runs one body plan N times, scan / map / while_loop / cond bodies run fused
// kernels, and every result is bitwise eager's. Also: a body the target fails to compile is
// interpreted (or runs eager steps), and an error raised inside a planned body reaches the user
// as it does eagerly.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "expect_error.h"
#include "jit/cpu/cpu_target.h"
#include "jit/plan/jit_plan.h"
#include "jit_recorded_util.h"
#include "kiln/kiln.h"
#include "tracer/region_cache.h"

namespace kiln {
namespace {

using testing::expect_error;
using testing::expect_iterations_match;
using testing::expect_lists_bitwise_equal;
using testing::JitMode;
using testing::ramp;

using JitBodyPlanTest = testing::JitRecordedTest<>;

Tensor data(std::vector<int64_t> shape, uint64_t seed) {
  JitMode off(false);
  manual_seed(seed);
  return randn(IntList(shape));
}

// The body plans of every cached region's JIT plan: how many distinct ones, and how many kernel
// steps they hold together (each distinct plan counted once).
struct BodyCount {
  int plans = 0;
  int kernels = 0;
};
BodyCount body_count() {
  BodyCount c;
  std::vector<const tracer::RegionPlan*> seen;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    std::shared_ptr<tracer::RegionPlan> p = r->jit_plan();
    const auto* jp = dynamic_cast<const jit::JitPlan*>(p.get());
    if (jp == nullptr) continue;
    for (const auto& per_node : jp->body_plans())
      for (const auto& b : per_node) {
        if (!b || std::find(seen.begin(), seen.end(), b.get()) != seen.end()) continue;
        seen.push_back(b.get());
        ++c.plans;
        if (const auto* bj = dynamic_cast<const jit::JitPlan*>(b.get()))
          c.kernels += bj->num_kernels();
      }
  }
  return c;
}

// A pre-norm residual layer written from primitives: layer norm, an affine map, a tanh-form gelu
// and a residual add (one row kernel: the rest is its epilogue).
TensorList layer(const TensorList& a) {
  const Tensor& x = a[0];
  Tensor mu = x.mean(IntList{-1}, true);
  Tensor d = x - mu;
  Tensor h = d / sqrt((d * d).mean(IntList{-1}, true) + 1e-5) * a[1] + a[2];
  Tensor g = 0.5 * h * (1.0 + tanh((h + 0.044715 * h * h * h) * 0.7978845608));
  return TensorList{x + g};
}

TEST_F(JitBodyPlanTest, RegionLayersShareOneBodyPlan) {
  constexpr int kLayers = 6;
  std::vector<TensorList> weights;
  for (int l = 0; l < kLayers; ++l) weights.push_back({data({48}, 10 + l), data({48}, 20 + l)});
  const Tensor x0 = data({5, 48}, 1);
  const Region r = region("test.body_plans.layer", layer);
  auto program = [&](int) {
    Tensor h = x0;
    for (const TensorList& w : weights) h = r({h, w[0], w[1]})[0];
    return TensorList{h};
  };
  expect_iterations_match(program, 3, "six region layers");
  const BodyCount c = body_count();
  EXPECT_EQ(c.plans, 1) << "the six calls' bodies are copies of one body: one plan";
  EXPECT_GE(c.kernels, 1)
      << "layer norm with the affine map, gelu and the residual as its epilogue";
}

TEST_F(JitBodyPlanTest, ScanAndMapBodiesRunFusedKernels) {
  const Tensor xs = data({7, 4, 33}, 2), h0 = data({4, 33}, 3), w = data({33}, 4);
  auto program = [&](int) {
    auto [carry, ys] = scan(
        [&](const TensorList& c, const TensorList& x) {
          Tensor h = tanh(c[0] * w + x[0] * 0.75) + sigmoid(x[0]);
          return std::pair<TensorList, TensorList>{{h}, {h * 2.0 - c[0]}};
        },
        {h0}, {xs});
    TensorList m =
        map([](const TensorList& a) { return TensorList{exp(a[0] * -0.5) + a[0]}; }, {xs});
    return TensorList{carry[0], ys[0], m[0]};
  };
  expect_iterations_match(program, 2, "scan and map");
  const BodyCount c = body_count();
  EXPECT_EQ(c.plans, 2);
  EXPECT_GE(c.kernels, 2);
}

TEST_F(JitBodyPlanTest, WhileLoopAndCondBodiesRunFusedKernels) {
  const Tensor x0 = ramp({3, 17}, 0.25, 0.125);
  auto program = [&](int it) {
    TensorList out = while_loop([](const TensorList& s) { return s[0] < 4.0; },
                                [](const TensorList& s) {
                                  return TensorList{s[0] + 1.0, s[1] * 0.5 + sin(s[1]) * 0.25};
                                },
                                {full({}, 0.0), x0});
    Tensor pred = full({}, it % 2 == 0 ? 1.0 : 0.0).to(kBool);
    TensorList c = cond(
        pred, [](const TensorList& a) { return TensorList{exp(a[0]) - a[0] * 3.0}; },
        [](const TensorList& a) { return TensorList{log1p(abs(a[0])) * 2.0}; }, {out[1]});
    return TensorList{out[0], out[1], c[0]};
  };
  expect_iterations_match(program, 2, "while_loop and cond");
  EXPECT_GE(body_count().kernels, 3) << "the loop body and both branches";
}

// A scalar inside a body that changes from call to call (a branch's clamp bound, a loop body's
// step, a scan's scale) makes another region: only top-level scalars are promoted to runtime
// inputs, so a hit on the region planned with the first value baked into its body plans would
// give the first call's results again (it did, before bodies were keyed by their scalars' values).
TEST_F(JitBodyPlanTest, BodyScalarsThatChangeDoNotRunTheOldBodysPlan) {
  const Tensor x0 = ramp({3, 17}, 0.25, 0.125), xs = data({4, 3, 17}, 6);
  auto program = [&](int it) {
    const double s = 1.0 + it;
    TensorList c = cond(
        full({}, 1.0).to(kBool),
        [&](const TensorList& a) { return TensorList{clamp(a[0] * 3.0, 0.0, s).pow(s * 0.5) + s}; },
        [](const TensorList& a) { return TensorList{a[0] * 0.0}; }, {x0});
    TensorList w = while_loop([](const TensorList& st) { return st[0] < 3.0; },
                              [&](const TensorList& st) {
                                return TensorList{st[0] + 1.0, st[1] * (0.5 * s) + 1.0};
                              },
                              {full({}, 0.0), x0});
    auto [carry, ys] = scan(
        [&](const TensorList& h, const TensorList& x) {
          Tensor n = tanh(h[0] * s + x[0]);
          return std::pair<TensorList, TensorList>{{n}, {n * 2.0}};
        },
        {x0}, {xs});
    return TensorList{c[0], w[1], carry[0], ys[0]};
  };
  expect_iterations_match(program, 4, "body scalars that change every call");
}

// Codegen fails for the body's kernels: they stay eager steps (or the body interpreted), and the
// results are still eager's.
TEST_F(JitBodyPlanTest, CodegenFaultInABodyKeepsEagerResults) {
  const Tensor x = data({6, 40}, 5);
  const Region r = region("test.body_plans.fault", [](const TensorList& a) {
    return TensorList{(a[0] * 0.3671875 + 0.8359375).relu() *
                      a[0]};  // constants no other test uses
  });
  jit::inject_cpu_codegen_faults(1000);
  expect_iterations_match([&](int) { return TensorList{r({r({x})[0]})[0]}; }, 2, "faulting body");
  jit::inject_cpu_codegen_faults(0);
  EXPECT_EQ(body_count().kernels, 0);
}

// An index out of range inside a planned body raises at the sync point, naming the op, as the
// eager call does; a good call afterwards still runs.
TEST_F(JitBodyPlanTest, ErrorInsideAPlannedBodyRaises) {
  const Tensor x = data({4, 16}, 6);
  const Region r = region("test.body_plans.gather", [](const TensorList& a) {
    Tensor y = (a[0] * 1.5 + 0.25).tanh();
    return TensorList{gather(y, 1, a[1]) * 2.0};
  });
  const Tensor bad = from_vector<int64_t>({0, 1, 99, 2}, {4, 1});
  const Tensor good = from_vector<int64_t>({0, 1, 15, 2}, {4, 1});
  auto program = [&](const Tensor& idx) {
    Tensor out = r({x, idx})[0];
    kiln::sync();
    return out;
  };
  {
    JitMode off(false);
    expect_error([&] { program(bad); }, "gather");
  }
  Tensor want;
  {
    JitMode off(false);
    want = program(good);
  }
  JitMode on(true);
  expect_error([&] { program(bad); }, "gather");
  expect_error([&] { program(bad); }, "gather");  // planned now (threshold 1): the plan raises
  expect_lists_bitwise_equal({program(good)}, {want}, "a good call after the errors");
}

}  // namespace
}  // namespace kiln
