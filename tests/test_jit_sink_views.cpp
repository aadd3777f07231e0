// Views turned into index maps (jit/passes/sink_views.h): programs that take a view of a pointwise
// result and compute on it, recorded and planned, against eager: bitwise equal, the view sunk
// (one kernel, no buffer between two kernels), and left alone where sinking could change what the
// user sees (a view returned to the user, a view a reduction or matmul reads, a result with other
// readers). Each program also runs at a second size through the same plan (plans are
// size-generic), with inputs that broadcast along the viewed dims.
#include <gtest/gtest.h>

#include <functional>

#include "jit/passes/passes.h"
#include "jit/plan/jit_plan.h"
#include "jit_recorded_util.h"
#include "kiln/kiln.h"
#include "record_util.h"
#include "runtime/dispatcher.h"
#include "tracer/graph_printer.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

using testing::ConfigOverride;
using testing::JitMode;
using testing::JitRestore;

class JitSinkViewsTest : public testing::JitRecordedTest<0> {
 protected:
  struct Planned {
    int kernels = 0;
    int compute_steps = 0;  // eager steps other than views
    int sunk = 0;           // views the passes sank while planning
    std::string graph;
  };

  // Runs `program` eagerly and recorded (planned at first sight), expects the same dtype,
  // geometry and bits for every result, and describes the plan of the last region.
  Planned run(const std::function<std::vector<Tensor>()>& program, const char* what) {
    std::vector<Tensor> want;
    {
      JitMode off(false);
      want = program();
    }
    const int sunk_before = jit::passes::pass_totals().sunk;
    std::vector<Tensor> got;
    {
      JitMode on(true);
      got = program();
      kiln::sync();
    }
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      EXPECT_EQ(got[i].strides(), want[i].strides()) << what << ": result " << i;
      testing::expect_bitwise_equal(got[i], want[i], what);
    }
    Planned p;
    p.sunk = jit::passes::pass_totals().sunk - sunk_before;
    const auto regions = tracer::RegionCache::instance().regions();
    if (regions.empty()) return p;
    std::shared_ptr<tracer::RegionPlan> keep = regions.back()->jit_plan();
    const auto* plan = dynamic_cast<const jit::JitPlan*>(keep.get());
    if (plan == nullptr) return p;
    p.kernels = plan->num_kernels();
    for (const jit::Step& s : plan->steps())
      if (!s.kernel &&
          !(op_def(plan->graph().nodes[static_cast<size_t>(s.node)].op).flags & kIsView))
        ++p.compute_steps;
    p.graph = tracer::print_graph(plan->graph());
    return p;
  }
};

using testing::normal;

TEST_F(JitSinkViewsTest, TransposeOfAChainFusesWithItsConsumer) {
  for (int64_t m : {37, 8}) {  // the second size runs through the first plan
    const Tensor a = normal({m, 29}, 1) * 3;
    const Tensor b = normal({29}, 2);  // broadcasts along dim 0 of the transposed chain
    const Tensor c = normal({29, m}, 3);
    const Planned p = run(
        [&] {
          Tensor chain = sin(a.to(kInt32).to(kFloat32) * b + 1);
          return std::vector<Tensor>{chain.t() * c - 2};
        },
        "transpose");
    if (m == 37) {
      EXPECT_GE(p.sunk, 1) << p.graph;
      EXPECT_EQ(p.kernels, 1) << p.graph;
      EXPECT_EQ(p.compute_steps, 0) << p.graph;
    }
  }
}

TEST_F(JitSinkViewsTest, SliceAndSelectComputeOnlyWhatTheyKeep) {
  for (int64_t m : {6, 11}) {
    const Tensor a = normal({m, 40}, 4);
    const Tensor row = normal({1, 40}, 5);  // size 1 along the selected dim: index 0 is read
    const Tensor col = normal({m, 1}, 6);   // size 1 along the sliced dim: kept whole
    const Planned p = run(
        [&] {
          Tensor e = exp(a * row) + col;
          Tensor s = e.slice(1, 3, 37, 2) * 0.5;  // columns 3, 5, ..., 35
          Tensor r = e.select(0, 2) + 1;          // row 2 (after the slice reads e too: no sink)
          Tensor f = (a - row).select(0, 3) * 2;  // row 3 of a chain read once: sunk
          Tensor g = (a * col).slice(1, 3, 37, 2) + 1;  // sunk; col keeps its one column
          return std::vector<Tensor>{s, r, f, g};
        },
        "slice/select");
    if (m == 6) {
      // e has two readers: its views stay. (a - row) and (a * col) are read once: they sink.
      EXPECT_EQ(p.sunk, 2) << p.graph;
    }
  }
}

TEST_F(JitSinkViewsTest, SqueezeUnsqueezeAndPermuteOfBroadcastInputs) {
  for (int64_t n : {13, 5}) {
    const Tensor a = normal({n, 1, 7}, 7);
    const Tensor b = normal({7}, 8);
    const Tensor c = normal({n, 7, 1, 3}, 9);
    const Planned p = run(
        [&] {
          Tensor s = tanh(a * b).squeeze() * 3;                       // [n, 7]
          Tensor u = (a + b).unsqueeze(3) * c.permute({0, 2, 1, 3});  // [n, 1, 7, 3]
          Tensor q = sigmoid(c + 1).permute({3, 1, 0, 2}) - 1;        // [3, 7, n, 1]
          return std::vector<Tensor>{s, u, q};
        },
        "squeeze/unsqueeze/permute");
    if (n == 13) {
      EXPECT_GE(p.sunk, 3) << p.graph;
      EXPECT_EQ(p.compute_steps, 0) << p.graph;
    }
  }
}

TEST_F(JitSinkViewsTest, ViewsTheUserSeesOrThatReadTheLayoutStay) {
  const Tensor a = normal({19, 23}, 10);
  const Tensor b = normal({23, 19}, 11);
  const Planned p = run(
      [&] {
        Tensor returned = (a * 2).t();              // the user gets a view: strides kept
        Tensor reduced = (a + 1).t().sum({1});      // a reduction reads the transposed layout
        Tensor multiplied = (a - 1).t().matmul(a);  // so does matmul
        Tensor shared = exp(b);
        Tensor both = shared.t() + shared.t().t().t();  // exp(b) has two readers
        return std::vector<Tensor>{returned, reduced, multiplied, both};
      },
      "kept views");
  EXPECT_EQ(p.sunk, 0) << p.graph;
}

TEST_F(JitSinkViewsTest, PassesOffKeepsTheViews) {
  ConfigOverride<bool> off(config().jit_passes, false);
  const Tensor a = normal({9, 31}, 12);
  const Planned p = run([&] { return std::vector<Tensor>{sin(a * 2).t() + 1}; }, "passes off");
  EXPECT_EQ(p.sunk, 0);
  EXPECT_EQ(p.kernels, 2) << p.graph;
}

}  // namespace
}  // namespace kiln
