// region, opaque and compile (tracer/hop/): eager results, the region registry's signature
// count, nesting (scan inside a region), gradients, host callbacks, every error message.
#include "expect_error.h"
#include "gradcheck.h"
#include "record_util.h"
#include "tracer/hop/region_registry.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Carry = std::pair<TensorList, TensorList>;

TEST(HopRegion, RunsTheBodyAndCountsDistinctSignatures) {
  hop::reset_region_registry();
  int runs = 0;
  Region layer = region("hop_test.layer", [&](const TensorList& a) {
    ++runs;
    return TensorList{relu(a[0]) + a[1]};
  });
  EXPECT_EQ(layer.name(), "hop_test.layer");
  Tensor x = from_vector<float>({-1, 2}, {2}), b = from_vector<float>({10, 20}, {2});
  Tensor y = x;
  for (int i = 0; i < 100; ++i) y = layer({y, b})[0];
  EXPECT_EQ(runs, config().jit ? 1 : 100);  // recorded: traced once, then replayed
  EXPECT_EQ(hop::region_signature_count("hop_test.layer"), 1u);
  EXPECT_EQ(hop::region_call_count("hop_test.layer"), 100u);
  Tensor ref = x;
  for (int i = 0; i < 100; ++i) ref = relu(ref) + b;
  expect_bitwise_equal(y, ref);
  // New shapes or dtypes are new signatures; a copy of the Region shares its name.
  Region copy = layer;
  copy({ones({3}), ones({3})});
  copy({ones({3}, kFloat64), ones({3}, kFloat64)});
  layer({ones({3}), ones({3})});
  EXPECT_EQ(hop::region_signature_count("hop_test.layer"), 3u);
  EXPECT_EQ(hop::region_signature_count("hop_test.never_called"), 0u);
}

TEST(HopRegion, ScanInsideARegionWithGradients) {
  hop::reset_region_registry();
  Region rnn = region("hop_test.rnn", [](const TensorList& a) {
    Tensor w = a[1];
    auto cell = [w](const TensorList& c, const TensorList& x) {
      Tensor h = tanh(c[0] * w + x[0]);
      return Carry{{h}, {h}};
    };
    auto [carry, ys] = scan(cell, {a[2]}, {a[0]});
    return TensorList{sum(ys[0], {0}), carry[0]};
  });
  expect_gradcheck(
      [&](const std::vector<Tensor>& in) {
        TensorList out = rnn({in[0], in[1], in[2]});
        return out[0] * out[1];
      },
      {leaf({4, 3}, -1, 1, 1), leaf({3}, -1, 1, 2), leaf({3}, -1, 1, 3)});
  EXPECT_EQ(hop::region_signature_count("hop_test.rnn"), 1u);
}

TEST(HopRegion, Errors) {
  Fn same = [](const TensorList& a) { return a; };
  expect_error([&] { region("", same); }, "region: the name is empty");
  expect_error([&] { region("r", nullptr); }, "region: fn is empty");
  Region r = region("hop_test.err", same);
  expect_error([&] { r({ones({1}), Tensor()}); }, "region 'hop_test.err': args[1] is an undefined");
  Region bad = region("hop_test.bad", [](const TensorList&) { return TensorList{Tensor()}; });
  expect_error([&] { bad({ones({1})}); },
               "region 'hop_test.bad': output 0 of fn is an undefined tensor");
}

TEST(HopOpaque, RunsOnMaterializedTensorsAndMayReadData) {
  Tensor x = from_vector<float>({1, 2, 3}, {3}) * 2.0;  // recorded when KILN_JIT=1
  std::vector<float> seen;
  Fn host = [&](const TensorList& a) {
    seen = a[0].to_vector<float>();  // reading data inside is fine
    float m = 0;
    for (float v : seen) m = std::max(m, v);
    return TensorList{a[0] / static_cast<double>(m), scalar_tensor(m)};
  };
  TensorList out = opaque(host, {x + 1.0});
  EXPECT_EQ(seen, (std::vector<float>{3, 5, 7}));
  expect_bitwise_equal(out[0], (x + 1.0) / 7.0);
  EXPECT_EQ(out[1].item<float>(), 7.0f);
}

TEST(HopOpaque, GradientsFlowThroughItsOps) {
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        Fn host = [](const TensorList& a) { return TensorList{a[0] * a[0]}; };
        return opaque(host, {in[0]})[0];
      },
      {leaf({3}, -1, 1, 4)});
}

TEST(HopOpaque, Errors) {
  Fn same = [](const TensorList& a) { return a; };
  expect_error([&] { opaque(nullptr, {ones({1})}); }, "opaque: fn is empty");
  expect_error([&] { opaque(same, {Tensor()}); }, "opaque: args[0] is an undefined tensor");
  expect_error([&] { opaque([](const TensorList&) { return TensorList{Tensor()}; }, {}); },
               "opaque: output 0 of fn is an undefined tensor");
}

TEST(HopCompile, CallsTheFunction) {
  int runs = 0;
  CompiledFn f = compile([&](const TensorList& a) {
    ++runs;
    return TensorList{gelu(a[0]) * a[1]};
  });
  Tensor x = from_vector<float>({-1, 0.5, 2}, {3}), w = full({3}, 3.0);
  for (int i = 0; i < 3; ++i) expect_bitwise_equal(f({x, w})[0], gelu(x) * w);
  // Recorded, fn is traced at the first call and its trace replayed (same guards) after.
  EXPECT_EQ(runs, config().jit ? 1 : 3);
  expect_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return f({in[0], in[1]})[0];
      },
      {leaf({3}, -1, 1, 5), leaf({3}, -1, 1, 6)});
}

TEST(HopCompile, Errors) {
  expect_error([&] { compile(nullptr); }, "compile: fn is empty");
  CompiledFn f = compile([](const TensorList& a) { return a; });
  expect_error([&] { f({Tensor()}); }, "compile: args[0] is an undefined tensor");
  CompiledFn g = compile([](const TensorList&) { return TensorList{Tensor()}; });
  expect_error([&] { g({}); }, "compile: output 0 of the compiled function is an undefined tensor");
}

TEST(HopNesting, EverythingInsideACompiledFunction) {
  // compile > region > checkpoint > cond / map, with a captured weight, against plain code.
  Tensor w = from_vector<double>({0.5, -1, 2}, {3}).requires_grad_();
  Region blk = region("hop_test.nested", [&](const TensorList& a) {
    Fn body = [&](const TensorList& b) {
      Fn pos = [&](const TensorList& c) { return TensorList{c[0] * w}; };
      Fn neg = [&](const TensorList& c) { return TensorList{c[0] - w}; };
      Fn row = [](const TensorList& r) { return TensorList{r[0].sum()}; };
      Tensor s = map(row, {b[0]})[0];
      return cond(s.sum() > 0.0, pos, neg, {b[0]});
    };
    return checkpoint(body, a);
  });
  CompiledFn f = compile([&](const TensorList& a) { return blk(a); });
  Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = f({x})[0];
  expect_bitwise_equal(y, x * w);
  y.sum().backward();
  expect_bitwise_equal(w.grad(), sum(x, {0}));
}

}  // namespace
