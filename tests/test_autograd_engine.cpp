// The autograd engine: accumulation, graph shapes, grad mode, and every error path.
#include "gradcheck.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

bool message_has(const std::function<void()>& fn, const std::string& part) {
  try {
    fn();
  } catch (const Error& e) {
    return std::string(e.what()).find(part) != std::string::npos;
  }
  return false;
}

TEST(AutogradEngine, AccumulatesAcrossUsesAndCalls) {
  Tensor x = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  Tensor y = x * x + x * 3.0;  // dy/dx = 2x + 3, x used three times
  y.backward(ones({3}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{5, 7, 9}));
  (x * 2.0).backward(ones({3}, kFloat64));  // accumulates into .grad
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{7, 9, 11}));
}

TEST(AutogradEngine, DiamondGraphAndUnreachedBranch) {
  Tensor x = from_vector<double>({2}, {1}).requires_grad_();
  Tensor w = from_vector<double>({5}, {1}).requires_grad_();
  Tensor a = x * 3.0;
  Tensor b = a * a;  // 9x^2
  Tensor c = a + b;  // 3x + 9x^2 -> 3 + 18x = 39
  Tensor unused = w * 2.0;
  c.backward(ones({1}, kFloat64));
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 39.0);
  EXPECT_FALSE(w.grad().defined());
}

TEST(AutogradEngine, LeafAndGradFn) {
  Tensor x = ones({2}, kFloat64).requires_grad_();
  EXPECT_TRUE(x.is_leaf());
  Tensor y = x * 2.0;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn_name(), "MulBackward");
  EXPECT_FALSE(y.detach().requires_grad());
  EXPECT_TRUE(y.detach().is_same_storage(y));
  Tensor i = ones({2}, kInt64);
  EXPECT_FALSE((i + 1).requires_grad());
  EXPECT_FALSE((x > 0.5).requires_grad());  // Bool results carry no gradient
}

TEST(AutogradEngine, NoGradGuard) {
  Tensor x = ones({2}, kFloat64).requires_grad_();
  {
    NoGradGuard g;
    EXPECT_FALSE((x * 2.0).requires_grad());
    x.add_(1.0);  // allowed on a leaf under no_grad
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{2, 2}));
}

TEST(AutogradEngine, InPlaceOnNonLeafRebasesHistory) {
  Tensor x = from_vector<double>({1, 2}, {2}).requires_grad_();
  Tensor y = x * 3.0;
  y.mul_(x);  // y = 3x * x
  y.add_(1.0);
  y.backward(ones({2}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6, 12}));
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        Tensor t = in[0] * 1.0;
        t.mul_(in[1]).sub_(in[0]).div_(2.0);
        return t;
      },
      {leaf({3}, 0.5, 2, 1), leaf({3}, 0.5, 2, 2)});
}

TEST(AutogradEngine, Errors) {
  Tensor x = ones({2}, kFloat64).requires_grad_();
  EXPECT_TRUE(message_has([&] { x.add_(1.0); }, "leaf tensor that requires grad"));
  EXPECT_TRUE(message_has([&] { (x * 2.0).backward(); }, "one element"));
  EXPECT_TRUE(message_has([&] { ones({2}).backward(); }, "does not require grad"));
  EXPECT_TRUE(message_has([&] { ones({2}, kInt64).requires_grad_(); }, "floating"));
  EXPECT_TRUE(message_has([&] { (x * 2.0).requires_grad_(false); }, "leaf"));
  EXPECT_TRUE(message_has([&] { (x * 2.0).backward(ones({3}, kFloat64)); }, "shape"));

  // A tensor saved for backward and then modified in place.
  Tensor a = ones({2}, kFloat64).requires_grad_();
  Tensor b = a * 2.0;
  Tensor c = b * b;  // saves b
  b.add_(1.0);
  EXPECT_TRUE(message_has([&] { c.backward(ones({2}, kFloat64)); }, "modified by an in-place"));

  // Backward twice without retain_graph.
  Tensor d = x * x;
  d.backward(ones({2}, kFloat64));
  EXPECT_TRUE(message_has([&] { d.backward(ones({2}, kFloat64)); }, "second time"));
  Tensor e = x * x;
  e.backward(ones({2}, kFloat64), /*retain_graph=*/true);
  EXPECT_NO_THROW(e.backward(ones({2}, kFloat64)));

  // In-place into a view of a tensor that requires grad.
  Tensor v = (x * 1.0).slice(0, 0, 1);
  EXPECT_TRUE(message_has([&] { v.mul_(2.0); }, "view"));
}

TEST(AutogradEngine, GradientReachesBaseThroughViews) {
  Tensor base = zeros({2, 3}, kFloat64).requires_grad_();
  Tensor row = base[1];
  Tensor col = base.t()[2];
  (row * 2.0 + 0.0).backward(ones({3}, kFloat64));
  (col * 3.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(base.grad().to_vector<double>(), (std::vector<double>{0, 0, 3, 2, 2, 5}));
}

}  // namespace

namespace {

TEST(AutogradEngine, FactoriesHonourRequiresGrad) {
  auto opts = TensorOptions().dtype(kFloat64).requires_grad(true);
  for (const Tensor& t : {zeros({2}, opts), ones({2}, opts), full({2}, 3.0, opts), rand({2}, opts),
                          randn({2}, opts), arange(0.0, 2.0, 1.0, opts), linspace(0, 1, 2, opts),
                          from_vector<double>({1, 2}, {2}, opts), empty({2}, opts)}) {
    EXPECT_TRUE(t.requires_grad());
    EXPECT_TRUE(t.is_leaf());
  }
  EXPECT_FALSE(zeros({2}).requires_grad());
  EXPECT_THROW(zeros({2}, TensorOptions().dtype(kInt64).requires_grad(true)), Error);
  EXPECT_EQ(scalar_tensor(7).dtype(), kFloat32);
}

// Every leaf gets a .grad of its own: AddBackward hands one gradient tensor to both inputs, and
// the seed of backward() is the caller's, so AccumulateGrad keeps a gradient without copying only
// when nothing else holds it. Scaling each .grad in place (gradient clipping) scales it once.
TEST(AutogradEngine, LeavesNeverShareAGradientTensor) {
  Tensor x = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  Tensor w = from_vector<double>({4, 5, 6}, {3}).requires_grad_();
  Tensor c = from_vector<double>({2, 2, 2}, {3});
  ((x + w) * c).sum().backward();
  EXPECT_NE(x.grad().impl(), w.grad().impl());
  for (Tensor p : {x, w}) {
    NoGradGuard no_grad;
    p.grad().mul_(0.5);
  }
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1, 1, 1}));

  // A leaf as the root: its .grad is a copy of the caller's seed, not the seed itself.
  Tensor v = from_vector<double>({1, 2}, {2}).requires_grad_();
  Tensor g = from_vector<double>({5, 6}, {2});
  v.backward(g);
  g.mul_(2.0);
  EXPECT_EQ(v.grad().to_vector<double>(), (std::vector<double>{5, 6}));
}

}  // namespace
