// The traced higher-order ops (tracer/hop/traced.h): with recording forced on, each op records one
// node whose bodies the interpreter runs, bitwise equal to eager mode; a lazy predicate does not
// flush; captured weights are lifted to capture inputs; nested ops land in the outer node's body;
// a repeated cond is one cached region. Fallbacks, errors, region and compile:
// test_hop_traced_fallback.cpp.
#include "expect_error.h"
#include "hop_traced_util.h"
#include "runtime/autograd/grad_mode.h"
#include "tracer/recorder.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Carry = std::pair<TensorList, TensorList>;

void clear_regions() {
  kiln::sync();
  tracer::RegionCache::instance().clear();
}

// One cond on a predicate computed by earlier recorded ops (true or false as `threshold` says).
TensorList cond_on_lazy_predicate(double threshold) {
  Tensor x = ramp({2, 3});
  Tensor y = x * 2.0 - 1.0;
  Tensor pred = y.sum() > threshold;
  Fn yes = [](const TensorList& a) { return TensorList{tanh(a[0]) * 3.0, a[1].sum()}; };
  Fn no = [](const TensorList& a) { return TensorList{a[0].exp() - a[1], a[1].amax()}; };
  TensorList out = cond(pred, yes, no, {y, x});
  return {out[0] + 1.0, out[1]};
}

TEST(HopTraced, CondBothBranchesMatchEager) {
  expect_recorded_matches_eager([] { return cond_on_lazy_predicate(0.0); }, "cond taken");
  expect_recorded_matches_eager([] { return cond_on_lazy_predicate(1e6); }, "cond not taken");
}

TEST(HopTraced, CondOnALazyPredicateDoesNotFlush) {
  JitMode jit(true);
  Tensor x = ramp({2, 3});
  clear_regions();
  Tensor pred = (x * 2.0).sum() > 1.0;
  const int64_t before = tracer::pending_ops_this_thread();
  EXPECT_GT(before, 0);
  TensorList out = cond(
      pred, [](const TensorList& a) { return TensorList{a[0] * 3.0}; },
      [](const TensorList& a) { return TensorList{a[0] - 3.0}; }, {x});
  const int64_t after = tracer::pending_ops_this_thread();
  EXPECT_GT(after, before) << "the cond flushed the segment";
  Tensor z = out[0] + 1.0;
  EXPECT_GT(tracer::pending_ops_this_thread(), after);
  kiln::sync();
  const tracer::Node* n = the_flushed_node(OpId::Cond);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->subgraphs.size(), 2u);
  Tensor want;
  {
    JitMode off(false);
    want = x * 3.0 + 1.0;
  }
  expect_bitwise_equal(z, want);
}

// Newton's iteration for sqrt(a), until every element converged: the trip count depends on data.
// Carried: {x, the last step's size, the iteration count}. (A body that passes a carried value
// through unchanged, as examples/newton_while.cpp does with its previous x, falls back.)
TensorList newton_sqrt() {
  Tensor a = linspace(0.01, 1000.0, 64, kFloat64);
  auto not_converged = [&](const TensorList& c) {
    return logical_and(any(c[1] > 1e-12 * c[0]), c[2] < int64_t{100});
  };
  auto step = [&](const TensorList& c) {
    Tensor x = (c[0] + a / c[0]) * 0.5;
    return TensorList{x, abs(x - c[0]), c[2] + 1};
  };
  return while_loop(not_converged, step,
                    {full_like(a, 1.0), full_like(a, 1.0), scalar_tensor(int64_t{0}, kInt64)});
}

TEST(HopTraced, WhileLoopNewtonSqrtMatchesEager) {
  clear_regions();
  expect_recorded_matches_eager(newton_sqrt, "while_loop");
  const tracer::Node* n = the_flushed_node(OpId::WhileLoop);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->subgraphs.size(), 2u);
  EXPECT_EQ(n->attrs.ints[0], 3);  // carried
  EXPECT_EQ(n->attrs.ints[1], 0);  // cond_fn captures nothing
  EXPECT_EQ(n->attrs.ints[2], 1);  // body_fn captures a
  const TensorList out = run_eagerly(newton_sqrt);
  EXPECT_GT(out[2].item<int64_t>(), 5);
  EXPECT_LT(out[2].item<int64_t>(), 100);
}

// A tanh RNN: h' = tanh(x_t Wx + h Wh + b), ys = h', over captured weights.
TensorList tanh_rnn() {
  Tensor wx = ramp({3, 4}, -0.5, 0.0625), wh = ramp({4, 4}, -0.25, 0.03125);
  Tensor b = ramp({4}, 0.125, -0.0625), xs = ramp({5, 2, 3}, -1.0, 0.0625);
  auto step = [&](const TensorList& c, const TensorList& x) {
    Tensor h = tanh(x[0].matmul(wx) + c[0].matmul(wh) + b);
    return Carry{{h}, {h}};
  };
  auto [carry, ys] = scan(step, {zeros({2, 4})}, {xs});
  return {carry[0], ys[0]};
}

TEST(HopTraced, ScanTanhRnnWithCapturedWeightsMatchesEager) {
  clear_regions();
  expect_recorded_matches_eager(tanh_rnn, "scan");
  const tracer::Node* n = the_flushed_node(OpId::Scan);
  ASSERT_NE(n, nullptr);
  // inputs [init, xs, captures...]; ints {#init, #xs, #captures, #ys}: wx, wh, b lifted.
  EXPECT_EQ(n->attrs.ints[0], 1);
  EXPECT_EQ(n->attrs.ints[1], 1);
  EXPECT_EQ(n->attrs.ints[2], 3);
  EXPECT_EQ(n->attrs.ints[3], 1);
  EXPECT_EQ(n->inputs.size(), 5u);
  ASSERT_EQ(n->subgraphs.size(), 1u);
  EXPECT_EQ(n->subgraphs[0].inputs.size(), 5u);
}

TEST(HopTraced, MapMatchesEager) {
  clear_regions();
  expect_recorded_matches_eager(
      [] {
        Tensor w = ramp({4}, 0.25, 0.5);
        return map(
            [&](const TensorList& x) {
              return TensorList{softmax(x[0] * w, 0), x[1].sum()};
            },
            {ramp({3, 4}), ramp({3, 2, 2}, 1.0, -0.125)});
      },
      "map");
  const tracer::Node* n = the_flushed_node(OpId::Map);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.ints[0], 2);  // xs
  EXPECT_EQ(n->attrs.ints[1], 1);  // w
}

TEST(HopTraced, RegionCheckpointAndCompileRecordACallNode) {
  auto body = [](const TensorList& a) { return TensorList{gelu(a[0].matmul(a[1])) * 0.5}; };
  Region r = region("hop_traced_mlp", body);
  CompiledFn c = compile(body);
  const std::pair<const char*, std::function<TensorList()>> cases[] = {
      {"region",
       [&] {
         return r({ramp({2, 3}), ramp({3, 2}, -0.5)});
       }},
      {"checkpoint",
       [&] {
         NoGradGuard no_grad;
         return checkpoint(body, {ramp({2, 3}), ramp({3, 2}, -0.5)});
       }},
      {"compile",
       [&] {
         return c({ramp({2, 3}), ramp({3, 2}, -0.5)});
       }},
  };
  for (const auto& [what, program] : cases) {
    clear_regions();
    expect_recorded_matches_eager(program, what);
    const tracer::Node* n = the_flushed_node(OpId::Call);
    ASSERT_NE(n, nullptr) << what;
    EXPECT_EQ(n->attrs.ints[0], 2) << what;
    EXPECT_EQ(n->subgraphs.size(), 1u) << what;
  }
}

TEST(HopTraced, LiftedCapturesOfCondAreCountedPerBranch) {
  clear_regions();
  auto program = [] {
    Tensor w1 = ramp({3}, 0.5, 0.5), w2 = ramp({3}, -1.0, 0.25), w3 = ramp({3}, 2.0, -0.5);
    Tensor x = ramp({3});
    Tensor pred = x.sum() > 1.0;
    return cond(
        pred, [&](const TensorList& a) { return TensorList{a[0] * w1 + w2}; },
        [&](const TensorList& a) { return TensorList{a[0] * w3}; }, {x});
  };
  expect_recorded_matches_eager(program, "cond with captures");
  const tracer::Node* n = the_flushed_node(OpId::Cond);
  ASSERT_NE(n, nullptr);
  // inputs [pred, x, w1, w2, w3]; ints {#operands, #captures 0, #captures 1}
  EXPECT_EQ(n->attrs.ints[0], 1);
  EXPECT_EQ(n->attrs.ints[1], 2);
  EXPECT_EQ(n->attrs.ints[2], 1);
  EXPECT_EQ(n->inputs.size(), 5u);
}

TEST(HopTraced, ACaptureRecordedJustBeforeTheOpIsLifted) {
  clear_regions();
  auto program = [] {
    Tensor w = ramp({4}) * 3.0 - 2.0;  // lazy when recording: no flush before map reads it
    return map([&](const TensorList& x) { return TensorList{x[0] * w + 1.0}; }, {ramp({5, 4})});
  };
  expect_recorded_matches_eager(program, "lazy capture");
  const tracer::Node* n = the_flushed_node(OpId::Map);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.ints[1], 1);
  // The capture is the output of the sub node recorded in the same segment, not a graph input.
  ASSERT_EQ(n->inputs.size(), 2u);
  bool made_in_segment = false;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    if (nodes_of(r->graph, OpId::Map).empty()) continue;
    for (const tracer::Node& m : r->graph.nodes) made_in_segment |= m.output == n->inputs[1];
  }
  EXPECT_TRUE(made_in_segment);
}

// The nested op's node, inside subgraph `k` of the one flushed node of `outer`.
void expect_nested(OpId outer, size_t k, OpId inner) {
  const tracer::Node* n = the_flushed_node(outer);
  ASSERT_NE(n, nullptr);
  ASSERT_GT(n->subgraphs.size(), k);
  EXPECT_EQ(nodes_of(n->subgraphs[k], inner).size(), 1u)
      << op_name(inner) << " not in subgraph " << k << " of " << op_name(outer);
  EXPECT_TRUE(flushed_nodes_of(inner).empty()) << op_name(inner) << " also at top level";
}

TEST(HopTraced, CondInsideAWhileLoopBody) {
  clear_regions();
  expect_recorded_matches_eager(
      [] {
        auto test = [](const TensorList& c) { return c[1] < int64_t{6}; };
        auto body = [](const TensorList& c) {
          TensorList x = cond(
              c[1] < int64_t{3}, [](const TensorList& a) { return TensorList{a[0] * 1.5}; },
              [](const TensorList& a) { return TensorList{a[0] - 0.25}; }, {c[0]});
          return TensorList{x[0], c[1] + 1};
        };
        return while_loop(test, body, {ramp({3}), scalar_tensor(int64_t{0}, kInt64)});
      },
      "cond in while_loop");
  expect_nested(OpId::WhileLoop, 1, OpId::Cond);
}

TEST(HopTraced, ScanInsideARegion) {
  clear_regions();
  Region cumsum = region("hop_traced_cumsum", [](const TensorList& a) {
    auto [carry, ys] = scan(
        [](const TensorList& c, const TensorList& x) {
          Tensor s = c[0] + x[0];
          return Carry{{s}, {s * 2.0}};
        },
        {zeros({2})}, {a[0]});
    return TensorList{carry[0], ys[0]};
  });
  expect_recorded_matches_eager([&] { return cumsum({ramp({4, 2})}); }, "scan in region");
  expect_nested(OpId::Call, 0, OpId::Scan);
}

TEST(HopTraced, MapInsideACheckpoint) {
  clear_regions();
  expect_recorded_matches_eager(
      [] {
        NoGradGuard no_grad;
        Tensor w = ramp({3}, 1.0, -0.5);
        return checkpoint(
            [&](const TensorList& a) {
              return map([&](const TensorList& x) { return TensorList{sigmoid(x[0] * w)}; }, a);
            },
            {ramp({4, 3})});
      },
      "map in checkpoint");
  expect_nested(OpId::Call, 0, OpId::Map);
}

TEST(HopTraced, RegionInsideAScan) {
  clear_regions();
  Region cell = region("hop_traced_cell",
                       [](const TensorList& a) { return TensorList{tanh(a[0] + a[1] * 0.5)}; });
  expect_recorded_matches_eager(
      [&] {
        auto [carry, ys] = scan(
            [&](const TensorList& c, const TensorList& x) {
              Tensor h = cell({c[0], x[0]})[0];
              return Carry{{h}, {h}};
            },
            {zeros({3})}, {ramp({4, 3})});
        return TensorList{carry[0], ys[0]};
      },
      "region in scan");
  expect_nested(OpId::Scan, 0, OpId::Call);
}

TEST(HopTraced, RepeatedCondIsOneCachedRegion) {
  JitMode jit(true);
  Tensor x = ramp({4});
  clear_regions();
  CacheDelta delta;
  TensorList got;
  for (int i = 0; i < 5; ++i) {
    TensorList out = cond(
        x.sum() > 1.0, [](const TensorList& a) { return TensorList{a[0] * 2.0}; },
        [](const TensorList& a) { return TensorList{-a[0]}; }, {x});
    got.push_back(out[0]);
    kiln::sync();
  }
  EXPECT_EQ(delta.now().regions, 1);
  EXPECT_EQ(delta.now().hits, 4);
  for (const Tensor& g : got) EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1, 1.5, 2, 2.5}));
}

// A cond whose results are never used still runs when its body holds an op that checks data
// (gather's index range): the error raises at the sync point as it does eagerly at the call
// (tracer/canonicalize.cpp keeps such higher-order nodes alive).
TEST(HopTraced, UnusedOpWhoseBodyChecksDataStillRaises) {
  auto program = [] {
    Tensor x = ramp({4});
    Tensor idx = from_vector<int64_t>({9}, {1});  // out of range for 4 elements
    Fn bad = [idx](const TensorList& a) { return TensorList{gather(a[0], 0, idx) * 2.0}; };
    TensorList unused = cond(from_vector<bool>({true}, {}), bad, bad, {x});
    (void)unused;
    kiln::sync();
  };
  {
    JitMode off(false);
    expect_error(program, "gather");
  }
  JitMode jit(true);
  expect_error(program, "gather");
}

// A body traced on a strided input the segment already wrote into: the recorded value of that
// input is row-major, so the segment writes it back first (a flush) and the body reads the
// user's strided memory, as it was traced. Eagerly `a.t().view({12})` works on it.
TEST(HopTraced, StridedInputWrittenEarlierIsWrittenBackFirst) {
  auto program = [] {
    Tensor m = ramp({3, 4});
    kiln::sync();      // m is materialized memory
    Tensor x = m.t();  // [4, 3], strides [1, 4]
    x.add_(1.0);
    Fn body = [](const TensorList& a) { return TensorList{a[0].t().view({12}) * 2.0}; };
    TensorList r = cond(from_vector<bool>({true}, {}), body, body, {x});
    x.mul_(2.0);  // without it the add would be computed straight into m (no row-major value)
    return TensorList{r[0], m};
  };
  const TensorList want = run_eagerly(program);
  expect_lists_bitwise_equal(run_recorded(program), want, "cond over a written strided input");
}

}  // namespace
