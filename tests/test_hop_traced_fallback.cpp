// The traced higher-order ops, continued (test_hop_traced.cpp has the recorded forms): every
// reason a body falls back to eager mode (results bitwise eager, fallback counted, the random
// generator untouched by the trace), the branch mismatch errors of a recorded cond, a region
// called 100 times (one traced body), and compile's guards, captured weights and recompile limit.
#include "expect_error.h"
#include "hop_traced_util.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/config.h"
#include "tracer/body_tracer.h"
#include "tracer/graph_hash.h"
#include "tracer/hop/region_registry.h"
#include "tracer/hop/traced.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Carry = std::pair<TensorList, TensorList>;

const std::string kReadsData = "it reaches a sync point (item)";
const std::string kOpaque = "it calls opaque (a host callback)";
const std::string kRandom =
    "it calls a random op (a traced body's draws would differ from eager mode's)";
const std::string kWritesOutside =
    "it writes into a tensor from outside the body (or into its own argument)";
const std::string kGradients = tracer::kNeedsGradients;
const std::string kStridedResult = "it returns a strided view (a new result would be row-major)";
const std::string kSharedResults = "it returns results that share memory";
const std::string kStridedCarry =
    "it carries a strided tensor (zero iterations would return it as it is; the loop's results "
    "are row-major)";
const std::string kStridedPassthrough =
    "it returns a strided argument or capture itself (a new result would be row-major)";

// Recorded, `program` falls back `times` times for "op: reason" and still computes eager's
// results.
void expect_fallback(const std::string& op, const std::string& reason,
                     const std::function<TensorList()>& program, size_t times = 1) {
  const std::string key = op + ": " + reason;
  const TensorList want = run_eagerly(program);
  const size_t before = hop::fallback_count(key);
  const TensorList got = run_recorded(program);
  EXPECT_EQ(hop::fallback_count(key), before + times) << key;
  expect_lists_bitwise_equal(got, want, key);
}

Fn twice() {
  return [](const TensorList& a) { return TensorList{a[0] * 2.0}; };
}

TEST(HopTracedFallback, BodyReadsData) {
  expect_fallback("cond", kReadsData, [] {
    Tensor x = ramp({3});
    return cond(x.sum() > 0.0,
                [](const TensorList& a) { return TensorList{a[0] * a[0].sum().item<float>()}; },
                twice(), {x});
  });
}

TEST(HopTracedFallback, BodyCallsOpaque) {
  expect_fallback("map", kOpaque, [] {
    return map([](const TensorList& x) { return opaque(twice(), {x[0] + 1.0}); }, {ramp({3, 2})});
  });
}

TEST(HopTracedFallback, BodyCallsARandomOp) {
  expect_fallback("scan", kRandom, [] {
    manual_seed(5);
    auto [carry, ys] = scan(
        [](const TensorList& c, const TensorList& x) {
          Tensor h = c[0] + dropout(x[0], 0.5, /*train=*/true);
          return Carry{{h}, {h}};
        },
        {zeros({8})}, {ramp({4, 8})});
    return TensorList{carry[0], ys[0]};
  });
}

TEST(HopTracedFallback, BodyWritesIntoACapturedTensor) {
  expect_fallback(
      "region", kWritesOutside,
      [] {
        Tensor acc = zeros({3});
        Region r = region("hop_traced_accumulate", [&](const TensorList& a) {
          acc.add_(a[0]);
          return TensorList{a[0] * 3.0};
        });
        Tensor y = r({ramp({3})})[0];
        Tensor z = r({ramp({3}, 1.0)})[0];
        return TensorList{y, z, acc};
      },
      /*times=*/2);
}

TEST(HopTracedFallback, BodyWritesIntoItsArgument) {
  expect_fallback("checkpoint", kWritesOutside, [] {
    NoGradGuard no_grad;
    Tensor x = ramp({4});
    Tensor y = checkpoint(
        [](const TensorList& a) {
          Tensor arg = a[0];
          arg.mul_(2.0);
          return TensorList{arg + 1.0};
        },
        {x})[0];
    return TensorList{y, x};
  });
}

TEST(HopTracedFallback, OperandNeedsGradients) {
  expect_fallback("cond", kGradients, [] {
    Tensor x = ramp({3}).requires_grad_();
    TensorList out = cond(scalar_tensor(true), twice(), twice(), {x});
    return TensorList{out[0].detach()};
  });
}

TEST(HopTracedFallback, CapturedWeightNeedsGradients) {
  expect_fallback("map", kGradients, [] {
    Tensor w = ramp({2}).requires_grad_();
    TensorList out = map([&](const TensorList& x) { return TensorList{x[0] * w}; }, {ramp({3, 2})});
    return TensorList{out[0].detach()};
  });
}

TEST(HopTracedFallback, ErrorInTheBranchNotTaken) {
  // The message the bad branch raises, as eager mode would raise it if it ran.
  std::string message;
  try {
    JitMode off(false);
    Tensor bad = ones({3}) + ones({5});
  } catch (const Error& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty());
  expect_fallback("cond", "it raised an error while traced: " + message, [] {
    Tensor x = ones({3});
    return cond(x.sum() > 0.0, twice(),
                [](const TensorList& a) { return TensorList{a[0] + ones({5})}; }, {x});
  });
}

// A body may pass its argument through (a loop carrying its previous value): traced, the result
// is a new tensor with the argument's value (eagerly it is the argument itself).
TEST(HopTracedFallback, BodyPassingItsArgumentThroughIsTraced) {
  JitMode jit(true);
  Region same = region("hop_traced_identity", [](const TensorList& a) { return a; });
  Tensor x = ramp({3});
  const size_t before = hop::fallback_count("region: " + kSharedResults);
  TensorList out = same({x});
  expect_bitwise_equal(out[0], x);
  EXPECT_NE(out[0].impl(), x.impl());
  EXPECT_EQ(hop::fallback_count("region: " + kSharedResults), before);
}

// Results that eagerly alias each other, or are strided views, fall back: new row-major results
// would not keep that aliasing or layout (an in-place write through one would not show in the
// other; y.view() would not raise as eagerly).
TEST(HopTracedFallback, ResultsThatShareMemory) {
  expect_fallback("cond", kSharedResults, [] {
    TensorList out = cond(
        scalar_tensor(true),
        [](const TensorList& a) {
          Tensor t = a[0] * 2.0;
          return TensorList{t, t};
        },
        [](const TensorList& a) {
          Tensor t = a[0] * 3.0;
          return TensorList{t, t};
        },
        {ramp({3})});
    out[0].add_(100.0);
    return TensorList{out[0], out[1]};  // both are the written tensor
  });
  expect_fallback("region", kSharedResults, [] {
    Region r = region("hop_traced_view_result", [](const TensorList& a) {
      Tensor t = a[0] * 2.0;
      return TensorList{t, t.slice(0, 0, 2)};
    });
    TensorList out = r({ramp({3, 2})});
    out[0].add_(100.0);
    return out;  // out[1] is rows 0..1 of the written out[0]
  });
}

TEST(HopTracedFallback, StridedResult) {
  expect_fallback("cond", kStridedResult, [] {
    Tensor x = ramp({2, 3});
    TensorList out = cond(
        x.sum() > 0.0, [](const TensorList& a) { return TensorList{(a[0] * 2.0).t()}; },
        [](const TensorList& a) { return TensorList{(a[0] * 3.0).t()}; }, {x});
    EXPECT_FALSE(out[0].is_contiguous());  // eager's layout
    return out;
  });
}

// Eagerly a body that returns its argument returns the caller's tensor, strides and all; a
// traced node's result would be row-major, so a strided argument passed through falls back.
TEST(HopTracedFallback, StridedArgumentPassedThrough) {
  expect_fallback("region", kStridedPassthrough, [] {
    Region same = region("hop_traced_strided_identity", [](const TensorList& a) { return a; });
    Tensor x = ramp({2, 3}).t();
    TensorList out = same({x});
    EXPECT_EQ(out[0].strides(), x.strides());  // eager's layout
    return out;
  });
  expect_fallback("cond", kStridedPassthrough, [] {
    Tensor w = ramp({3, 2}).t();  // a captured strided tensor, returned by one branch
    Tensor x = ramp({2, 3});
    TensorList out = cond(
        x.sum() > 0.0, [w](const TensorList&) { return TensorList{w}; },
        [](const TensorList& a) { return TensorList{a[0] * 3.0}; }, {x});
    EXPECT_EQ(out[0].strides(), w.strides());
    return out;
  });
}

// Eagerly a while_loop that runs zero times returns its carried tensors as they are; a loop over a
// strided carry falls back so that its results keep eager's strides.
TEST(HopTracedFallback, WhileLoopOverAStridedCarry) {
  expect_fallback("while_loop", kStridedCarry, [] {
    Tensor x = ramp({3, 4}).t();  // [4, 3], strides [1, 4]
    TensorList out = while_loop([](const TensorList&) { return from_vector<bool>({false}, {}); },
                                [](const TensorList& c) { return TensorList{c[0] * 2.0}; }, {x});
    EXPECT_EQ(out[0].strides(), x.strides());
    return out;
  });
}

// Random draws after a fallback (and after a body that traced) are eager's: tracing, aborted or
// not, does not move the generator.
TEST(HopTracedFallback, RandomNumbersAfterAFallbackAreEagers) {
  for (bool taken : {true, false}) {
    expect_fallback("cond", kRandom, [taken] {
      manual_seed(11);
      Tensor x = ramp({64});
      Tensor before = rand({4});
      Fn drop = [](const TensorList& a) { return TensorList{dropout(a[0], 0.5, true)}; };
      TensorList out = cond(scalar_tensor(taken), drop, twice(), {x});
      TensorList traced = cond(x.sum() > 0.0, twice(), twice(), {x});
      return TensorList{before, out[0], traced[0], rand({32}), dropout(x, 0.25, true)};
    });
  }
}

TEST(HopTracedErrors, CondBranchesMustAgree) {
  JitMode jit(true);
  Tensor x = ramp({3});
  Tensor pred = x.sum() > 0.0;
  auto branch = [](std::function<TensorList(const Tensor&)> f) {
    return [f](const TensorList& a) { return f(a[0]); };
  };
  Fn two = branch([](const Tensor& a) { return TensorList{a * 2.0, a.sum()}; });
  // (The branches return no argument as is: such a body falls back before the outputs are
  // compared.)
  expect_error(
      [&] { cond(pred, two, branch([](const Tensor& a) { return TensorList{a + 1.0}; }), {x}); },
      "cond: false_fn returned 1 tensors but true_fn has 2");
  expect_error(
      [&] {
        cond(pred, two, branch([](const Tensor& a) { return TensorList{a + 1.0, a - 1.0}; }), {x});
      },
      "cond: output 1 of false_fn has shape [3] Float32", "but true_fn's has shape [] Float32");
  expect_error(
      [&] {
        cond(pred, two, branch([](const Tensor& a) {
               return TensorList{a + 1.0, a.sum().to(kFloat64)};
             }),
             {x});
      },
      "cond: output 1 of false_fn has shape [] Float64", "but true_fn's has shape [] Float32");
  expect_error(
      [&] {
        cond(pred, two, branch([](const Tensor& a) {
               return TensorList{cat({a, a}), a.sum()};
             }),
             {x});
      },
      "cond: output 0 of false_fn has shape [6] Float32", "but true_fn's has shape [3] Float32");
}

TEST(HopTracedRegion, HundredCallsTraceOneBody) {
  const std::string name = "hop_traced_hundred";
  Region cell =
      region(name, [](const TensorList& a) { return TensorList{tanh(a[0] * a[1] + 0.125)}; });
  auto program = [&] {
    Tensor w = ramp({4}, 0.5, 0.125);
    Tensor h = ramp({4}, -0.5);
    for (int i = 0; i < 100; ++i) h = cell({h, w})[0];
    return TensorList{h};
  };
  const TensorList want = run_eagerly(program);
  kiln::sync();
  tracer::RegionCache::instance().clear();
  const TensorList got = run_recorded(program);
  expect_lists_bitwise_equal(got, want, "100 region calls");
  EXPECT_EQ(hop::region_body_count(name), 1u);
  const std::vector<const tracer::Node*> calls = flushed_nodes_of(OpId::Call);
  ASSERT_EQ(calls.size(), 100u);
  ASSERT_EQ(tracer::RegionCache::instance().regions().size(), 1u) << "one flush";
  for (const tracer::Node* n : calls) {
    ASSERT_EQ(n->subgraphs.size(), 1u);
    EXPECT_EQ(tracer::graph_hash(n->subgraphs[0]), tracer::graph_hash(calls[0]->subgraphs[0]));
    // One body in memory: the calls share the region's traced body (tracer::Subgraphs), so a
    // model of many layers does not copy it per call, nor per copy of the graph.
    EXPECT_EQ(&n->subgraphs[0], &calls[0]->subgraphs[0]);
  }
}

TEST(HopTracedCompile, TracesOncePerSignature) {
  int runs = 0;
  Tensor w = ramp({3}, 1.0, 0.5);
  CompiledFn f = compile([&](const TensorList& a) {
    ++runs;
    return TensorList{a[0] * w + 1.0};
  });
  auto reference = [&](const Tensor& x) {
    JitMode off(false);
    return x * w + 1.0;
  };
  JitMode jit(true);
  for (int i = 0; i < 5; ++i) {
    Tensor x = ramp({3}, i);
    expect_bitwise_equal(f({x})[0], reference(x), "same shapes");
  }
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(f.traces(), 1u);
  Tensor wide = ramp({2, 3});
  expect_bitwise_equal(f({wide})[0], reference(wide), "new shape");
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(f.traces(), 2u);
  // The captured weight is read at each call: an in-place update is seen without a new trace.
  {
    NoGradGuard no_grad;
    w.add_(1.0);
  }
  Tensor x = ramp({3}, -2.0);
  expect_bitwise_equal(f({x})[0], reference(x), "updated weight");
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{2, 2.5, 3}));
}

TEST(HopTracedCompile, RecompileLimitCapsTheTraces) {
  ConfigOverride limit(config().jit_recompile_limit, 2);
  int runs = 0;
  CompiledFn f = compile([&](const TensorList& a) {
    ++runs;
    return TensorList{sigmoid(a[0]) * 2.0};
  });
  auto reference = [](const Tensor& x) {
    JitMode off(false);
    return sigmoid(x) * 2.0;
  };
  JitMode jit(true);
  const int64_t lengths[] = {1, 2, 3, 4, 3, 1};
  const int expected_runs[] = {1, 2, 3, 4, 5, 5};  // past the limit every call runs fn
  for (size_t i = 0; i < std::size(lengths); ++i) {
    Tensor x = ramp({lengths[i]}, -1.0);
    expect_bitwise_equal(f({x})[0], reference(x), "call past the limit");
    EXPECT_EQ(runs, expected_runs[i]) << "call " << i;
  }
  EXPECT_EQ(f.traces(), 2u);
}

}  // namespace

// A region is traced once per argument signature: a later call replays the body with the tensors
// the first trace captured. KILN_JIT_VALIDATE traces every call again and raises when the
// function captured other tensors (here a per-layer weight captured instead of passed).
TEST(HopTracedFallback, ValidateCatchesARegionThatCapturesPerCallTensors) {
  JitMode jit(true);
  ConfigOverride validate(config().jit_validate, true);
  hop::reset_region_registry();
  const std::vector<Tensor> w = {full({3}, 1.0), full({3}, 2.0)};
  Tensor x = ramp({3});
  auto layer = [&](size_t i) {
    return region("hop_traced_validate",
                  [&w, i](const TensorList& a) { return TensorList{a[0] * w[i]}; });
  };
  layer(0)({x});
  expect_error([&] { layer(1)({x}); }, "region: the function traced another body, or captured",
               "KILN_JIT_VALIDATE");
  // Passed as an argument, the weight is an input of the one cached body: no error.
  Region good = region("hop_traced_validate_args",
                       [](const TensorList& a) { return TensorList{a[0] * a[1]}; });
  for (const Tensor& wi : w) expect_bitwise_equal(good({x, wi})[0], x.detach() * wi);
}

// A body traced under NoGradGuard and called again with gradients on must not replay a node that
// drops the captured weight's gradient: that call runs fn (its eager form).
TEST(HopTracedFallback, ReplayWithGradientsOfACapturedWeight) {
  JitMode jit(true);
  hop::reset_region_registry();
  Tensor w = full({3}, 2.0).requires_grad_();
  Region r = region("hop_traced_grad_replay",
                    [&w](const TensorList& a) { return TensorList{(a[0] * w).sum()}; });
  Tensor x = ramp({3});
  {
    NoGradGuard no_grad;
    r({x});
  }
  r({x})[0].backward();
  Tensor want;
  {
    JitMode off(false);
    want = x.detach();  // d(sum(x * w))/dw = x
  }
  expect_bitwise_equal(w.grad(), want);
}
