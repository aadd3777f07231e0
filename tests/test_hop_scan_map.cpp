// scan and map (tracer/hop/): results against hand-written loops, every error message, gradients
// (finite differences) including a weight captured by the body.
#include "expect_error.h"
#include "gradcheck.h"
#include "record_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Carry = std::pair<TensorList, TensorList>;

TEST(HopScan, CumulativeSumMatchesAPlainLoop) {
  Tensor xs = from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  auto step = [](const TensorList& c, const TensorList& x) {
    Tensor s = c[0] + x[0];
    return Carry{{s}, {s, x[0].sum()}};
  };
  auto [carry, ys] = scan(step, {zeros({2})}, {xs});
  ASSERT_EQ(carry.size(), 1u);
  ASSERT_EQ(ys.size(), 2u);
  Tensor acc = zeros({2});
  std::vector<Tensor> ref0, ref1;
  for (int64_t t = 0; t < 4; ++t) {
    acc = acc + xs.select(0, t);
    ref0.push_back(acc);
    ref1.push_back(xs.select(0, t).sum());
  }
  expect_bitwise_equal(carry[0], acc);
  expect_bitwise_equal(ys[0], stack(ref0, 0));
  expect_bitwise_equal(ys[1], stack(ref1, 0));
  EXPECT_EQ(ys[0].sizes(), (Shape{4, 2}));
  EXPECT_EQ(ys[1].sizes(), (Shape{4}));
  EXPECT_EQ(ys[0].to_vector<float>(), (std::vector<float>{1, 2, 4, 6, 9, 12, 16, 20}));
}

TEST(HopScan, SeveralXsAndCarriesOfMixedDtypes) {
  Tensor a = arange(6, kFloat64).reshape({3, 2});
  Tensor b = from_vector<int64_t>({10, 20, 30}, {3});
  auto step = [](const TensorList& c, const TensorList& x) {
    return Carry{{c[0] * x[0], c[1] + x[1]}, {}};
  };
  auto [carry, ys] = scan(step, {ones({2}, kFloat64), scalar_tensor(int64_t{1}, kInt64)}, {a, b});
  EXPECT_TRUE(ys.empty());
  EXPECT_EQ(carry[0].to_vector<double>(), (std::vector<double>{0 * 2 * 4, 1 * 3 * 5}));
  EXPECT_EQ(carry[1].item<int64_t>(), 61);
  EXPECT_EQ(carry[1].dtype(), kInt64);
}

TEST(HopScan, Errors) {
  auto keep = [](const TensorList& c, const TensorList& x) { return Carry{c, {x[0]}}; };
  Tensor c0 = zeros({2}), xs = ones({3, 2});
  expect_error([&] { scan(nullptr, {c0}, {xs}); }, "scan: fn is empty");
  expect_error([&] { scan(keep, {Tensor()}, {xs}); }, "scan: init[0] is an undefined tensor");
  expect_error([&] { scan(keep, {c0}, {xs, Tensor()}); }, "scan: xs[1] is an undefined tensor");
  expect_error([&] { scan(keep, {c0}, {}); }, "scan: xs is empty");
  expect_error([&] { scan(keep, {c0}, {zeros({0, 2})}); }, "scan: xs have length 0 along dim 0");
  expect_error([&] { scan(keep, {c0}, {scalar_tensor(1.0)}); }, "scan: xs[0] is a 0-dim tensor");
  expect_error(
      [&] {
        scan(keep, {c0}, {xs, ones({4})});
      },
      "scan: every xs must have the same length along dim 0",
      "xs[0] has 3 ([3, 2] Float32) but xs[1] has 4 ([4] Float32)");
  auto count = [](const TensorList& c, const TensorList&) { return Carry{{c[0], c[0]}, {}}; };
  expect_error([&] { scan(count, {c0}, {xs}); },
               "scan: fn's new carry returned 2 tensors but init has 1");
  auto grow = [](const TensorList& c, const TensorList&) { return Carry{{cat({c[0], c[0]})}, {}}; };
  expect_error([&] { scan(grow, {c0}, {xs}); },
               "scan: output 0 of fn's new carry has shape [4] Float32 but init[0] has shape [2] "
               "Float32");
  auto undefined_y = [](const TensorList& c, const TensorList&) { return Carry{c, {Tensor()}}; };
  expect_error([&] { scan(undefined_y, {c0}, {xs}); },
               "scan: output 0 of fn's ys at step 0 is an undefined tensor");
  // Bodies whose outputs depend on host state (a counter), not on data: recorded, a body is
  // traced once and every step runs that trace, so only eager mode can see them change.
  if (config().jit) return;
  auto varying = [n = 0](const TensorList& c, const TensorList& x) mutable {
    return Carry{c, {n++ == 2 ? x[0].to(kFloat64) : x[0]}};
  };
  expect_error([&] { scan(varying, {c0}, {xs}); },
               "scan: output 0 of fn's ys at step 2 has shape [2] Float64 but step 0's ys[0] has "
               "shape [2] Float32");
  auto fewer = [n = 0](const TensorList& c, const TensorList& x) mutable {
    return n++ == 0 ? Carry{c, {x[0]}} : Carry{c, {}};
  };
  expect_error([&] { scan(fewer, {c0}, {xs}); },
               "scan: fn's ys at step 1 returned 0 tensors but step 0's ys has 1");
}

// A tanh RNN cell: h' = tanh(x W^T + h U + b), ys = h'; loss = weighted sum of ys and final h.
Tensor rnn_loss(const std::vector<Tensor>& in) {
  Tensor xs = in[0], h0 = in[1], w = in[2], u = in[3];
  Tensor b = in[4];  // captured by the body, not passed
  auto cell = [&](const TensorList& c, const TensorList& x) {
    Tensor h = tanh(matmul(x[0], w.t()) + matmul(c[0], u) + b);
    return Carry{{h}, {h * h}};
  };
  auto [carry, ys] = scan(cell, {h0}, {xs});
  return ys[0].sum() + carry[0];
}

TEST(HopScan, GradientsIncludingACapturedBias) {
  expect_gradcheck(rnn_loss,
                   {leaf({5, 2, 3}, -1, 1, 1), leaf({2, 4}, -1, 1, 2), leaf({4, 3}, -1, 1, 3),
                    leaf({4, 4}, -0.5, 0.5, 4), leaf({4}, -1, 1, 5)});
}

TEST(HopScan, GradientsMatchAnUnrolledLoopBitwise) {
  std::vector<Tensor> a = {leaf({5, 2, 3}, -1, 1, 1), leaf({2, 4}, -1, 1, 2),
                           leaf({4, 3}, -1, 1, 3), leaf({4, 4}, -0.5, 0.5, 4), leaf({4}, -1, 1, 5)};
  std::vector<Tensor> b;
  for (const Tensor& t : a) b.push_back(t.detach().clone().requires_grad_());
  rnn_loss(a).sum().backward();
  // The same computation, unrolled by hand.
  Tensor h = b[1];
  std::vector<Tensor> ys;
  for (int64_t t = 0; t < 5; ++t) {
    h = tanh(matmul(b[0].select(0, t), b[2].t()) + matmul(h, b[3]) + b[4]);
    ys.push_back(h * h);
  }
  (stack(ys, 0).sum() + h).sum().backward();
  for (size_t i = 0; i < a.size(); ++i) expect_bitwise_equal(a[i].grad(), b[i].grad(), "grad");
}

// ---- map ----

TEST(HopMap, MatchesAPlainLoopAndStacks) {
  Tensor xs = from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor ks = from_vector<int64_t>({1, 2, 3}, {3});
  Fn f = [](const TensorList& x) { return TensorList{x[0] * x[1], x[0].sum() + x[1]}; };
  TensorList out = map(f, {xs, ks});
  ASSERT_EQ(out.size(), 2u);
  std::vector<Tensor> r0, r1;
  for (int64_t t = 0; t < 3; ++t) {
    r0.push_back(xs[t] * ks[t]);
    r1.push_back(xs[t].sum() + ks[t]);
  }
  expect_bitwise_equal(out[0], stack(r0, 0));
  expect_bitwise_equal(out[1], stack(r1, 0));
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 2, 6, 8, 15, 18}));
}

TEST(HopMap, Errors) {
  Fn same = [](const TensorList& x) { return x; };
  expect_error([&] { map(nullptr, {ones({2})}); }, "map: fn is empty");
  expect_error([&] { map(same, {}); }, "map: xs is empty");
  expect_error([&] { map(same, {Tensor()}); }, "map: xs[0] is an undefined tensor");
  expect_error([&] { map(same, {zeros({0})}); }, "map: xs have length 0 along dim 0");
  expect_error(
      [&] {
        map(same, {ones({2}), ones({3})});
      },
      "map: every xs must have the same length along dim 0");
  Fn undefined = [](const TensorList&) { return TensorList{Tensor()}; };
  expect_error([&] { map(undefined, {ones({2})}); },
               "map: output 0 of fn at step 0 is an undefined tensor");
  // Bodies whose outputs depend on host state (a counter), not on data: recorded, a body is
  // traced once and every step runs that trace, so only eager mode can see them change.
  if (config().jit) return;
  Fn varying = [n = 0](const TensorList& x) mutable {
    return TensorList{n++ == 1 ? cat({x[0], x[0]}) : x[0]};
  };
  expect_error(
      [&] {
        map(varying, {ones({3, 2})});
      },
      "map: output 0 of fn at step 1 has shape [4] Float32 but step 0's output[0] has "
      "shape [2] Float32");
  Fn fewer = [n = 0](const TensorList& x) mutable { return n++ == 0 ? x : TensorList{}; };
  expect_error(
      [&] {
        map(fewer, {ones({3, 2})});
      },
      "map: fn at step 1 returned 0 tensors but step 0's output has 1");
}

TEST(HopMap, GradientsWithACapturedWeight) {
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        Tensor w = in[1];
        Fn f = [w](const TensorList& x) { return TensorList{(sigmoid(x[0]) * w).sum()}; };
        return map(f, {in[0]})[0];
      },
      {leaf({4, 3}, -1, 1, 1), leaf({3}, -1, 1, 2)});
}

}  // namespace
