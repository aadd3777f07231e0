// checkpoint (tracer/hop/checkpoint*.cpp): same values and bitwise-same gradients as running the
// body directly, far fewer live bytes after forward, same random numbers on recompute, captured
// weights, several outputs, nesting, errors.
#include "expect_error.h"
#include "gradcheck.h"
#include "record_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

// One residual MLP block: x + tanh(x W1 + b1) W2, with x [batch, width] and a hidden layer four
// times wider. Without checkpoint its graph keeps the hidden activation (4 x an activation).
TensorList block(const TensorList& a) {
  Tensor h = tanh(matmul(a[0], a[1]) + a[2]);
  return {matmul(h, a[3]) + a[0]};
}

struct Chain {
  Tensor x;
  std::vector<TensorList> params;  // {w1, b1, w2} per block
};

Chain make_chain(int blocks, int64_t batch, int64_t width) {
  manual_seed(3);
  Chain c{randn({batch, width}).requires_grad_(), {}};
  for (int i = 0; i < blocks; ++i) {
    c.params.push_back({(randn({width, 4 * width}) * 0.1).requires_grad_(),
                        (randn({4 * width}) * 0.1).requires_grad_(),
                        (randn({4 * width, width}) * 0.1).requires_grad_()});
  }
  return c;
}

size_t live_bytes() {
  kiln::sync();  // recorded activations are materialized (or dropped as dead) at the flush
  return cpu_allocator_stats().allocated;
}

TEST(HopCheckpoint, SavesMemoryAndGivesBitwiseTheSameGradients) {
  const int kBlocks = 16;
  const int64_t kBatch = 128, kWidth = 64;  // one activation: 32 KiB
  Chain plain = make_chain(kBlocks, kBatch, kWidth), ckpt = make_chain(kBlocks, kBatch, kWidth);
  size_t before = live_bytes();
  Tensor y = plain.x;
  for (const TensorList& p : plain.params) y = block({y, p[0], p[1], p[2]})[0];
  Tensor loss = y.sum();
  size_t plain_bytes = live_bytes() - before;
  loss.backward();
  loss = Tensor();
  y = Tensor();

  before = live_bytes();
  Tensor z = ckpt.x;
  for (const TensorList& p : ckpt.params) z = checkpoint(block, {z, p[0], p[1], p[2]})[0];
  Tensor loss2 = z.sum();
  size_t ckpt_bytes = live_bytes() - before;
  EXPECT_EQ(z.grad_fn_name(), "CheckpointBackward");
  loss2.backward();

  // Without checkpoint each block keeps its hidden activation (4 units) and its output (1);
  // with it, only its output (the next block's saved argument).
  RecordProperty("checkpoint_bytes", std::to_string(ckpt_bytes));
  RecordProperty("plain_bytes", std::to_string(plain_bytes));
  EXPECT_LT(ckpt_bytes * 3, plain_bytes) << "checkpoint " << ckpt_bytes << " plain " << plain_bytes;
  expect_bitwise_equal(plain.x.grad(), ckpt.x.grad(), "x");
  for (int i = 0; i < kBlocks; ++i)
    for (int j = 0; j < 3; ++j)
      expect_bitwise_equal(plain.params[i][j].grad(), ckpt.params[i][j].grad(), "param");
}

TEST(HopCheckpoint, CapturedWeightsGetGradients) {
  Tensor w = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  Tensor x = from_vector<double>({4, 5, 6}, {3}).requires_grad_();
  Fn body = [&](const TensorList& a) { return TensorList{a[0] * w * w}; };
  Tensor y = checkpoint(body, {x})[0];
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{4, 20, 54}));
  y.sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{8, 20, 36}));  // 2 x w
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 4, 9}));    // w^2
  // Only the captured weight requires grad.
  Tensor v = from_vector<double>({1, 1, 1}, {3});
  Tensor y2 = checkpoint(body, {v})[0];
  EXPECT_TRUE(y2.requires_grad());
  y2.sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{10, 24, 42}));
}

TEST(HopCheckpoint, GradcheckWithSeveralOutputsAndUnusedOnes) {
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        Tensor w = in[2];
        Fn body = [w](const TensorList& a) {
          Tensor h = sin(matmul(a[0], w));
          return TensorList{h * a[1], h.sum(), a[1].exp(), a[0] * 0.0 + 1.0};
        };
        TensorList out = checkpoint(body, {in[0], in[1]});
        // out[3] is not used: no gradient reaches output 3 of the node.
        return out[0] * out[1] + out[2];
      },
      {leaf({2, 3}, -1, 1, 1), leaf({2, 4}, -1, 1, 2), leaf({3, 4}, -1, 1, 3)});
}

TEST(HopCheckpoint, RecomputeDrawsTheSameRandomNumbers) {
  manual_seed(11);
  Tensor x = ones({64}, kFloat64).requires_grad_();
  Fn noisy = [](const TensorList& a) {
    return TensorList{dropout(a[0], 0.5, true) * rand_like(a[0])};
  };
  Tensor y = checkpoint(noisy, {x})[0];
  Tensor after = rand({4});  // the forward's draws are consumed: backward must not rewind them
  y.backward(ones({64}, kFloat64));
  // d y / d x = mask * 2 * r = y / x, with x = 1.
  expect_bitwise_equal(x.grad(), y.detach());
  // The global stream was not disturbed by the recompute.
  manual_seed(11);
  Tensor again = checkpoint(noisy, {ones({64}, kFloat64)})[0];
  expect_bitwise_equal(again, y.detach());
  expect_bitwise_equal(rand({4}), after);
}

TEST(HopCheckpoint, NoGradOrNothingRequiringGradJustRuns) {
  Tensor x = from_vector<float>({1, 2}, {2});
  int runs = 0;
  Fn body = [&](const TensorList& a) {
    ++runs;
    return TensorList{a[0] * 3.0};
  };
  Tensor y = checkpoint(body, {x})[0];
  EXPECT_FALSE(y.requires_grad());
  Tensor xg = x.detach().requires_grad_();
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(checkpoint(body, {xg})[0].requires_grad());
  }
  EXPECT_EQ(runs, 2);
  expect_bitwise_equal(y, x * 3.0);
}

TEST(HopCheckpoint, NestedMapInsideAndCheckpointInsideCheckpoint) {
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        Fn inner = [](const TensorList& a) { return TensorList{tanh(a[0]) * a[1]}; };
        Fn outer = [inner](const TensorList& a) {
          Fn row = [](const TensorList& r) { return TensorList{(r[0] * r[0]).sum()}; };
          Tensor m = map(row, {a[0]})[0];  // [rows]
          return TensorList{checkpoint(inner, {a[0], m.unsqueeze(1)})[0]};
        };
        return checkpoint(outer, {in[0]})[0];
      },
      {leaf({3, 4}, -1, 1, 9)});
}

TEST(HopCheckpoint, Errors) {
  Tensor x = ones({2}, kFloat64).requires_grad_();
  Fn same = [](const TensorList& a) { return TensorList{a[0] * 2.0}; };
  expect_error([&] { checkpoint(nullptr, {x}); }, "checkpoint: fn is empty");
  expect_error(
      [&] {
        checkpoint(same, {x, Tensor()});
      },
      "checkpoint: args[1] is an undefined tensor");
  Fn undefined = [](const TensorList&) { return TensorList{Tensor()}; };
  expect_error([&] { checkpoint(undefined, {x}); },
               "checkpoint: output 0 of fn is an undefined tensor");
  // An argument written in place between forward and backward.
  Tensor a = ones({2}, kFloat64).requires_grad_() * 1.0;
  Tensor y = checkpoint(same, {a})[0];
  {
    NoGradGuard g;
    a.add_(1.0);
  }
  expect_error([&] { y.sum().backward(); }, "checkpoint: argument 0",
               "modified by an in-place operation");
  // Backward twice without retain_graph.
  Tensor z = checkpoint(same, {x})[0].sum();
  z.backward(Tensor(), true);
  z.backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{4, 4}));
  expect_error([&] { z.backward(); }, "backward through the graph a second time");
  // A body whose recompute differs from its forward.
  int runs = 0;
  Fn drifting = [&](const TensorList& a) {
    return TensorList{runs++ == 0 ? a[0] * 1.0 : a[0].sum()};
  };
  Tensor d = checkpoint(drifting, {x})[0];
  expect_error([&] { d.sum().backward(); },
               "checkpoint: output 0 of fn (recomputed in backward) has shape [] Float64 but the "
               "forward's has shape [2] Float64");
}

// A body that writes one of its arguments in place would be recomputed in backward from the
// written value: checkpoint raises at the call instead of giving a wrong gradient.
TEST(HopCheckpoint, BodyWritingItsArgumentRaises) {
  Fn body = [](const TensorList& a) {
    Tensor scale = a[1];
    scale.mul_(2.0);
    return TensorList{a[0] * scale};
  };
  for (bool jit : {false, true}) {
    JitMode mode(jit);
    Tensor x = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
    Tensor s = from_vector<double>({1, 1, 1}, {3});
    expect_error([&] { checkpoint(body, {x, s}); }, "checkpoint: fn modified argument 1");
    // Without gradients nothing is recomputed: the write is the program's own business.
    NoGradGuard no_grad;
    Tensor y = checkpoint(body, {x, s})[0];
    EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{4, 8, 12}));
  }
}

// An argument also used outside the body (a residual connection around the call) gets the body's
// contributions summed inside the nested backward, then the outside ones: the same sum in another
// order, equal to the gradient without checkpoint up to Float32 rounding (docs/control_flow.md).
TEST(HopCheckpoint, ArgumentAlsoUsedOutsideMatchesUpToSummationOrder) {
  auto grad_of_x = [](bool use_checkpoint, bool leaf_arg) {
    manual_seed(4);
    Tensor x0 = randn({64}).requires_grad_();
    Tensor x = leaf_arg ? x0 : x0 * 1.0;
    Fn body = [](const TensorList& a) {
      return TensorList{sin(a[0]) * 3.3 + exp(a[0]) * cos(a[0])};  // three uses of a[0]
    };
    Tensor y = use_checkpoint ? checkpoint(body, {x})[0] : body({x})[0];
    (y * tanh(x)).sum().backward();  // and one use of x outside
    return x0.grad();
  };
  for (bool leaf_arg : {false, true})
    EXPECT_TRUE(kiln::allclose(grad_of_x(true, leaf_arg), grad_of_x(false, leaf_arg), 1e-5, 1e-6))
        << (leaf_arg ? "leaf argument" : "non-leaf argument");
}

}  // namespace
