// cond and while_loop (tracer/hop/): results against plain kiln code, predicates of every dtype,
// every error message, nesting, captured weights, gradients through cond, and while_loop's
// refusal to differentiate.
#include "expect_error.h"
#include "gradcheck.h"
#include "record_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

Fn times(double k) {
  return [k](const TensorList& a) { return TensorList{a[0] * k}; };
}

TEST(HopCond, RunsOnlyTheTakenBranch) {
  Tensor x = from_vector<float>({1, -2, 3}, {3});
  int true_runs = 0, false_runs = 0;
  Fn t = [&](const TensorList& a) {
    ++true_runs;
    return TensorList{a[0] * 2.0, a[0].sum()};
  };
  Fn f = [&](const TensorList& a) {
    ++false_runs;
    return TensorList{-a[0], a[0].amax()};
  };
  TensorList yes = cond(from_vector<bool>({true}, {1}), t, f, {x});
  TensorList no = cond(from_vector<bool>({false}, {}), t, f, {x});
  // Eagerly only the taken branch runs; recorded, each branch is traced once per cond call.
  EXPECT_EQ(true_runs, config().jit ? 2 : 1);
  EXPECT_EQ(false_runs, config().jit ? 2 : 1);
  ASSERT_EQ(yes.size(), 2u);
  ASSERT_EQ(no.size(), 2u);
  expect_bitwise_equal(yes[0], x * 2.0);
  expect_bitwise_equal(yes[1], x.sum());
  expect_bitwise_equal(no[0], -x);
  expect_bitwise_equal(no[1], x.amax());
}

TEST(HopCond, PredicateOfAnyDtypeNonzeroIsTrue) {
  struct Case {
    Tensor pred;
    bool expected;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Case> cases = {
      {from_vector<int64_t>({0}, {1}), false},
      {from_vector<int64_t>({-7}, {1, 1}), true},
      {from_vector<int32_t>({3}, {}), true},
      {from_vector<float>({0.0f}, {1}), false},
      {from_vector<float>({-0.0f}, {1}), false},
      {from_vector<double>({0.25}, {1}), true},
      {from_vector<double>({nan}, {1}), true},
      {from_vector<bool>({false}, {1}), false},
      {ones({3}).sum() > 2.5, true},  // a computed predicate (recorded, then read: a sync point)
  };
  Tensor x = from_vector<float>({5}, {1});
  for (size_t i = 0; i < cases.size(); ++i) {
    TensorList out = cond(cases[i].pred, times(1.0), times(-1.0), {x});
    EXPECT_EQ(out[0].item<float>(), cases[i].expected ? 5.0f : -5.0f) << "case " << i;
  }
}

TEST(HopCond, ReturnsBranchOutputsAsIs) {
  Tensor x = from_vector<float>({1, 2}, {2});
  Fn identity = [](const TensorList& a) { return a; };
  TensorList out = cond(scalar_tensor(true), identity, identity, {x});
  ASSERT_EQ(out.size(), 1u);
  if (config().jit) {  // recorded: a new tensor with the value the branch passed through
    expect_bitwise_equal(out[0], x);
    return;
  }
  EXPECT_TRUE(out[0].is_same_storage(x));
  EXPECT_EQ(out[0].impl(), x.impl());
}

TEST(HopCond, Errors) {
  Tensor x = ones({2});
  Fn ok = times(1.0);
  expect_error([&] { cond(scalar_tensor(true), Fn(), ok, {x}); }, "cond: true_fn is empty");
  expect_error([&] { cond(scalar_tensor(true), ok, Fn(), {x}); }, "cond: false_fn is empty");
  expect_error([&] { cond(Tensor(), ok, ok, {x}); }, "cond: pred is an undefined tensor");
  expect_error(
      [&] {
        cond(scalar_tensor(true), ok, ok, {x, Tensor()});
      },
      "cond: operands[1] is an undefined tensor");
  expect_error([&] { cond(ones({2}, kBool), ok, ok, {x}); },
               "cond: pred must have exactly one element", "[2] Bool");
  expect_error([&] { cond(zeros({0}), ok, ok, {x}); }, "cond: pred must have exactly one element");
  Fn bad = [](const TensorList& a) { return TensorList{a[0], Tensor()}; };
  expect_error([&] { cond(scalar_tensor(false), ok, bad, {x}); },
               "cond: output 1 of false_fn is an undefined tensor");
}

TEST(HopCond, GradientsThroughEitherBranchAndACapturedWeight) {
  for (bool which : {true, false}) {
    expect_gradcheck(
        [which](const std::vector<Tensor>& in) {
          Tensor w = in[1];  // captured by the branches: a lifted free variable
          Fn t = [w](const TensorList& a) { return TensorList{sin(a[0]) * w}; };
          Fn f = [w](const TensorList& a) { return TensorList{a[0] * a[0] + w.exp()}; };
          return cond(scalar_tensor(which), t, f, {in[0]})[0];
        },
        {leaf({2, 3}, -1, 1, 1), leaf({3}, -1, 1, 2)});
  }
}

TEST(HopCond, CapturedWeightGetsItsGradient) {
  Tensor w = from_vector<double>({2, 3}, {2}).requires_grad_();
  Tensor x = from_vector<double>({5, 7}, {2});
  Fn t = [&](const TensorList& a) { return TensorList{a[0] * w}; };
  TensorList out = cond(scalar_tensor(true), t, t, {x});
  out[0].sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{5, 7}));
}

// ---- while_loop ----

TEST(HopWhileLoop, MatchesAPlainLoop) {
  Tensor x = from_vector<float>({1, 2, 3}, {3});
  Tensor i0 = scalar_tensor(int64_t{0}, kInt64);
  int cond_calls = 0;
  auto below5 = [&](const TensorList& c) {
    ++cond_calls;
    return c[0] < int64_t{5};
  };
  Fn body = [](const TensorList& c) { return TensorList{c[0] + 1, c[1] * 1.5 + 1.0}; };
  TensorList out = while_loop(below5, body, {i0, x});
  Tensor ref = x;
  for (int k = 0; k < 5; ++k) ref = ref * 1.5 + 1.0;
  EXPECT_EQ(cond_calls, config().jit ? 1 : 6);  // recorded, cond_fn is traced once
  EXPECT_EQ(out[0].item<int64_t>(), 5);
  expect_bitwise_equal(out[1], ref);
}

TEST(HopWhileLoop, ZeroIterationsReturnsTheCarriedValues) {
  Tensor x = from_vector<float>({1, 2}, {2});
  auto never = [](const TensorList&) { return scalar_tensor(false); };
  TensorList out = while_loop(never, times(2.0), {x});
  // Eagerly the carried tensors themselves come back; recorded, the loop node's results are new
  // tensors with their values (docs/control_flow.md).
  if (config().jit)
    expect_bitwise_equal(out[0], x);
  else
    EXPECT_EQ(out[0].impl(), x.impl());
}

TEST(HopWhileLoop, Errors) {
  Tensor x = ones({3});
  // Data, not host state, decides the loop (a body is traced once when recording).
  auto once = [](const TensorList& c) { return c[0].sum() < 100.0; };
  auto always = [](const TensorList&) { return scalar_tensor(true); };
  expect_error([&] { while_loop(nullptr, times(1.0), {x}); }, "while_loop: cond_fn is empty");
  expect_error([&] { while_loop(always, nullptr, {x}); }, "while_loop: body_fn is empty");
  expect_error([&] { while_loop(always, times(1.0), {Tensor()}); },
               "while_loop: carried[0] is an undefined tensor");
  expect_error(
      [&] { while_loop([](const TensorList&) { return ones({2}, kBool); }, times(1), {x}); },
      "while_loop: the result of cond_fn must have exactly one element", "[2] Bool");
  expect_error([&] { while_loop([](const TensorList&) { return Tensor(); }, times(1), {x}); },
               "while_loop: the result of cond_fn is an undefined tensor");
  Fn two = [](const TensorList& c) { return TensorList{c[0], c[0]}; };
  expect_error([&] { while_loop(once, two, {x}); },
               "while_loop: body_fn returned 2 tensors but carried has 1");
  Fn shape = [](const TensorList& c) { return TensorList{c[0].sum()}; };
  expect_error([&] { while_loop(once, shape, {x}); },
               "while_loop: output 0 of body_fn has shape [] Float32 but carried[0] has shape "
               "[3] Float32");
  Fn dtype = [](const TensorList& c) { return TensorList{c[0].to(kFloat64)}; };
  expect_error([&] { while_loop(once, dtype, {x}); },
               "while_loop: output 0 of body_fn has shape [3] Float64 but carried[0] has shape "
               "[3] Float32");
  Fn undefined = [](const TensorList&) { return TensorList{Tensor()}; };
  expect_error([&] { while_loop(once, undefined, {x}); },
               "while_loop: output 0 of body_fn is an undefined tensor");
}

TEST(HopWhileLoop, BackwardRaisesButForwardValuesAreKept) {
  Tensor x = from_vector<double>({1, 2}, {2}).requires_grad_();
  Tensor n = scalar_tensor(int64_t{0}, kInt64);
  auto below3 = [](const TensorList& c) { return c[1] < int64_t{3}; };
  Fn body = [](const TensorList& c) { return TensorList{c[0] * 2.0, c[1] + 1}; };
  TensorList out = while_loop(below3, body, {x, n});
  EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{8, 16}));
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_EQ(out[0].grad_fn_name(), "WhileLoopBackward");
  EXPECT_FALSE(out[1].requires_grad());
  expect_error([&] { out[0].sum().backward(); },
               "while_loop: gradients through while_loop are not supported",
               "use scan with a fixed number of steps, or detach");
  // Zero iterations: the output is the input, yet the rule is the same.
  auto never = [](const TensorList&) { return scalar_tensor(false); };
  TensorList same = while_loop(never, body, {x, n});
  expect_error([&] { same[0].sum().backward(); }, "while_loop: gradients");
  // Detached outputs train fine downstream.
  Tensor w = ones({2}, kFloat64).requires_grad_();
  (out[0].detach() * w).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{8, 16}));
}

TEST(HopWhileLoop, CondInsideTheBody) {
  // Collatz steps from 27 (111 steps to reach 1), the parity choice made by cond.
  Tensor n0 = scalar_tensor(27.0, kFloat64), steps0 = scalar_tensor(int64_t{0}, kInt64);
  auto not_one = [](const TensorList& c) { return c[0] != 1.0; };
  Fn body = [](const TensorList& c) {
    Tensor half = c[0] * 0.5;
    Fn halve = [](const TensorList& a) { return TensorList{a[0] * 0.5}; };
    Fn triple = [](const TensorList& a) { return TensorList{a[0] * 3.0 + 1.0}; };
    Tensor next = cond(floor(half) == half, halve, triple, {c[0]})[0];
    return TensorList{next, c[1] + 1};
  };
  TensorList out = while_loop(not_one, body, {n0, steps0});
  int64_t n = 27, steps = 0;
  while (n != 1) n = (n % 2 == 0) ? n / 2 : 3 * n + 1, ++steps;
  EXPECT_EQ(out[0].item<double>(), 1.0);
  EXPECT_EQ(out[1].item<int64_t>(), steps);
}

}  // namespace
