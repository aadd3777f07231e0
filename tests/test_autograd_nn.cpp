// Gradient checks of matmul and the nn ops (finite differences in Float64, see gradcheck.h for
// the tolerances), and exact checks where the gradient is known in closed form (dropout, the
// ignored rows of cross_entropy, embedding's duplicate indices).
#include "gradcheck.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Inputs = std::vector<Tensor>;

Tensor mm2(const Inputs& x) { return matmul(x[0], x[1]); }

TEST(AutogradNN, MatmulVectorForms) {
  expect_gradcheck(mm2, {leaf({4}, -1, 1, 1), leaf({4}, -1, 1, 2)});        // dot
  expect_gradcheck(mm2, {leaf({3}, -1, 1, 1), leaf({3, 5}, -1, 1, 2)});     // vector @ matrix
  expect_gradcheck(mm2, {leaf({2, 3}, -1, 1, 1), leaf({3}, -1, 1, 2)});     // matrix @ vector
  expect_gradcheck(mm2, {leaf({3}, -1, 1, 1), leaf({2, 3, 4}, -1, 1, 2)});  // vector @ batch
  expect_gradcheck(mm2, {leaf({2, 4, 3}, -1, 1, 1), leaf({3}, -1, 1, 2)});  // batch @ vector
  expect_gradcheck(mm2, {transposed_leaf(4, 3), leaf({3}, -1, 1, 2)});
}

TEST(AutogradNN, MatmulMatrices) {
  expect_gradcheck(mm2, {leaf({2, 3}, -1, 1, 1), leaf({3, 4}, -1, 1, 2)});
  expect_gradcheck(mm2, {transposed_leaf(2, 3, -1, 1, 3), transposed_leaf(3, 4, -1, 1, 4)});
  expect_gradcheck(mm2, {leaf({1, 3}, -1, 1, 1), leaf({3, 1}, -1, 1, 2)});
  expect_gradcheck([](const Inputs& x) { return mm(x[0], x[1]); },
                   {leaf({3, 2}, -1, 1, 5), transposed_leaf(2, 4)});
}

TEST(AutogradNN, MatmulBatchedAndBroadcast) {
  expect_gradcheck(mm2, {leaf({2, 3, 4}, -1, 1, 1), leaf({2, 4, 2}, -1, 1, 2)});
  expect_gradcheck([](const Inputs& x) { return bmm(x[0], x[1]); },
                   {leaf({2, 2, 3}, -1, 1, 1), leaf({2, 3, 2}, -1, 1, 2)});
  // Broadcast batch dims, both ways, and a size-1 batch dim against a larger one.
  expect_gradcheck(mm2, {leaf({2, 1, 2, 3}, -1, 1, 1), leaf({3, 3, 2}, -1, 1, 2)});
  expect_gradcheck(mm2, {leaf({1, 2, 3}, -1, 1, 1), leaf({2, 1, 3, 2}, -1, 1, 2)});
  // Batched @ matrix: contiguous (folded into one product by matmul()) and permuted.
  expect_gradcheck(mm2, {leaf({2, 3, 4}, -1, 1, 1), leaf({4, 2}, -1, 1, 2)});
  expect_gradcheck([](const Inputs& x) { return matmul(x[0].transpose(0, 1), x[1]); },
                   {leaf({3, 2, 4}, -1, 1, 1), transposed_leaf(4, 2)});
  // Matrix @ batched, and transposed batch matrices.
  expect_gradcheck(mm2, {leaf({2, 3}, -1, 1, 1), leaf({2, 3, 3}, -1, 1, 2)});
  expect_gradcheck([](const Inputs& x) { return matmul(x[0].transpose(-2, -1), x[1]); },
                   {leaf({2, 3, 2}, -1, 1, 1), leaf({1, 3, 2}, -1, 1, 2)});
}

TEST(AutogradNN, MatmulOnlyOneSideRequiresGrad) {
  Tensor a = leaf({2, 3, 4}, -1, 1, 1);
  Tensor b = leaf({4, 2}, -1, 1, 2).detach();
  matmul(a, b).backward(ones({2, 3, 2}, kFloat64));
  ASSERT_TRUE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  // d/da sum(a @ b) = rowsums of b, broadcast over a's rows.
  std::vector<double> bv = b.to_vector<double>(), ga = a.grad().to_vector<double>();
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_DOUBLE_EQ(ga[i], bv[(i % 4) * 2] + bv[(i % 4) * 2 + 1]) << i;
}

TEST(AutogradNN, SoftmaxAndLogSoftmaxEveryDim) {
  for (int64_t dim : {0, 1, 2, -1, -2}) {
    auto sm = [dim](const Inputs& x) { return softmax(x[0], dim); };
    auto lsm = [dim](const Inputs& x) { return log_softmax(x[0], dim); };
    expect_gradcheck(sm, {leaf({2, 3, 4}, -2, 2)});
    expect_gradcheck(lsm, {leaf({2, 3, 4}, -2, 2)});
    if (dim == 2) continue;
    expect_gradcheck(sm, {transposed_leaf(3, 4, -2, 2)});
    expect_gradcheck(lsm, {transposed_leaf(3, 4, -2, 2)});
  }
  // A broadcast (expanded) input: the gradient sums back over the expanded dim.
  expect_gradcheck(
      [](const Inputs& x) {
        return softmax(x[0].expand({3, 4}), 0) * 2.0;
      },
      {leaf({1, 4})});
  expect_gradcheck(
      [](const Inputs& x) {
        return log_softmax(x[0].expand({3, 4}), -1);
      },
      {leaf({4})});
  expect_gradcheck([](const Inputs& x) { return softmax(x[0], 0); }, {leaf({5})});
}

TEST(AutogradNN, LayerNormWithAndWithoutAffine) {
  expect_gradcheck([](const Inputs& x) { return layer_norm(x[0], {4}); }, {leaf({3, 4})});
  expect_gradcheck([](const Inputs& x) { return layer_norm(x[0], {4}, x[1]); },
                   {leaf({3, 4}), leaf({4}, 0.5, 1.5, 2)});
  expect_gradcheck([](const Inputs& x) { return layer_norm(x[0], {4}, {}, x[1]); },
                   {leaf({3, 4}), leaf({4}, -1, 1, 2)});
  expect_gradcheck(
      [](const Inputs& x) {
        return layer_norm(x[0], {3, 4}, x[1], x[2], 1e-3);
      },
      {leaf({2, 3, 4}), leaf({3, 4}, 0.5, 1.5, 2), leaf({3, 4}, -1, 1, 3)});
  expect_gradcheck([](const Inputs& x) { return layer_norm(x[0], {3}, x[1], x[2]); },
                   {transposed_leaf(4, 3), leaf({3}, 0.5, 1.5, 2), leaf({3}, -1, 1, 3)});
  // Broadcast input (expanded rows), and a 1-D input (one row).
  expect_gradcheck(
      [](const Inputs& x) {
        return layer_norm(x[0].expand({3, 5}), {5}, x[1]);
      },
      {leaf({5}), leaf({5}, 0.5, 1.5, 2)});
}

TEST(AutogradNN, CrossEntropy) {
  Tensor target = from_vector<int64_t>({2, 0, 3}, {3});
  auto ce = [&](const Inputs& x) { return cross_entropy(x[0], target); };
  expect_gradcheck(ce, {leaf({3, 4}, -2, 2)});
  expect_gradcheck(ce, {transposed_leaf(3, 4, -2, 2)});
  expect_gradcheck(
      [&](const Inputs& x) {
        return cross_entropy(x[0].expand({3, 4}), target);
      },
      {leaf({4}, -2, 2)});
  Tensor t0 = scalar_tensor(1, kInt64);
  expect_gradcheck([&](const Inputs& x) { return cross_entropy(x[0], t0); }, {leaf({4}, -2, 2)});
}

TEST(AutogradNN, CrossEntropyIgnoredTarget) {
  Tensor target = from_vector<int64_t>({1, -100, 3, -100}, {4});
  auto ce = [&](const Inputs& x) { return cross_entropy(x[0], target); };
  expect_gradcheck(ce, {leaf({4, 5}, -2, 2)});
  // Ignored rows get exactly zero; counted rows are (softmax - onehot) / 2 (two rows counted).
  Tensor x = leaf({4, 5}, -2, 2);
  cross_entropy(x, target).backward();
  std::vector<double> g = x.grad().to_vector<double>();
  std::vector<double> xv = x.detach().to_vector<double>();
  for (int64_t n : {1, 3})
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(g[n * 5 + j], 0.0);
  double z = 0;
  for (int64_t j = 0; j < 5; ++j) z += std::exp(xv[j]);
  for (int64_t j = 0; j < 5; ++j)
    EXPECT_NEAR(g[j], (std::exp(xv[j]) / z - (j == 1 ? 1.0 : 0.0)) / 2.0, 1e-12);
  // Every row ignored: the loss is NaN, the gradient all zeros (as PyTorch).
  Tensor y = leaf({2, 3});
  Tensor all_ignored = from_vector<int64_t>({-100, -100}, {2});
  cross_entropy(y, all_ignored).backward();
  for (double v : y.grad().to_vector<double>()) EXPECT_EQ(v, 0.0);
}

TEST(AutogradNN, DropoutGradientIsTheForwardMaskExactly) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (double p : {0.25, 0.6}) {
      Tensor x = ones({7, 9}, dt).requires_grad_();
      Tensor y = dropout(x, p, /*train=*/true);
      Tensor w = (rand({7, 9}, dt) + 0.5);
      y.backward(w);
      // y = mask * T(1/(1-p)) for x = 1, so the gradient must be w * y to the last bit.
      Tensor expect = w * y.detach();
      EXPECT_TRUE(equal(x.grad(), expect)) << "p = " << p;
      // Some elements dropped and some kept (63 elements: all-or-nothing is ~impossible).
      std::vector<double> yv = y.detach().to(kFloat64).to_vector<double>();
      int kept = 0;
      for (double v : yv) kept += v != 0.0;
      EXPECT_GT(kept, 0);
      EXPECT_LT(kept, 63);
    }
  }
  // A non-contiguous input: element i of the logical row-major order keeps its draw.
  Tensor base = ones({4, 3}, kFloat64);
  Tensor xt = base.t().requires_grad_();
  Tensor yt = dropout(xt, 0.5, true);
  yt.backward(ones({3, 4}, kFloat64));
  EXPECT_TRUE(equal(xt.grad(), yt.detach()));
}

TEST(AutogradNN, Embedding) {
  Tensor idx = from_vector<int64_t>({1, 3, 1, 0, 3, 3}, {2, 3});
  expect_gradcheck([&](const Inputs& x) { return embedding(x[0], idx); }, {leaf({5, 3})});
  expect_gradcheck([&](const Inputs& x) { return embedding(x[0], idx) * 2.0; },
                   {transposed_leaf(5, 2)});
  Tensor idx32 = from_vector<int32_t>({4, 4, 0}, {3});
  Tensor w = leaf({5, 2});
  embedding(w, idx32).backward(from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2}));
  // Row 4 collects the first two gradient rows, row 0 the last, the rest stay zero.
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{5, 6, 0, 0, 0, 0, 0, 0, 4, 6}));
}

TEST(AutogradNN, Composites) {
  expect_gradcheck([](const Inputs& x) { return linear(x[0], x[1], x[2]); },
                   {leaf({2, 3, 4}, -1, 1, 1), leaf({5, 4}, -1, 1, 2), leaf({5}, -1, 1, 3)});
  expect_gradcheck([](const Inputs& x) { return linear(x[0].transpose(0, 1), x[1]); },
                   {leaf({3, 2, 4}, -1, 1, 1), transposed_leaf(3, 4)});
  expect_gradcheck([](const Inputs& x) { return mse_loss(x[0], x[1]); },
                   {leaf({3, 4}, -1, 1, 1), leaf({4}, -1, 1, 2)});
  expect_gradcheck([](const Inputs& x) { return mse_loss(x[0], x[1]); },
                   {transposed_leaf(3, 2), leaf({3, 2}, -1, 1, 2)});
  for (bool causal : {false, true}) {
    expect_gradcheck(
        [causal](const Inputs& x) {
          return scaled_dot_product_attention(x[0], x[1], x[2], causal);
        },
        {leaf({2, 3, 4}, -1, 1, 1), leaf({2, 3, 4}, -1, 1, 2), leaf({2, 3, 2}, -1, 1, 3)});
  }
  // Broadcast batch dims between q and k/v.
  expect_gradcheck(
      [](const Inputs& x) { return scaled_dot_product_attention(x[0], x[1], x[2], true); },
      {leaf({2, 1, 3, 2}, -1, 1, 1), leaf({2, 4, 2}, -1, 1, 2), leaf({1, 4, 3}, -1, 1, 3)});
}

TEST(AutogradNN, Float32GradientsMatchFloat64) {
  // The rules run in the input's dtype: Float32 gradients agree with Float64 ones to float
  // precision (tolerance 1e-5 absolute on O(1) values) and come back as Float32.
  auto grads = [](DType dt) {
    Tensor x = leaf({3, 4}, -2, 2, 1).detach().to(dt).requires_grad_();
    Tensor w = leaf({4, 4}, -1, 1, 2).detach().to(dt).requires_grad_();
    Tensor g = leaf({4}, 0.5, 1.5, 3).detach().to(dt).requires_grad_();
    Tensor target = from_vector<int64_t>({3, -100, 0}, {3});
    Tensor h = softmax(layer_norm(x, {4}, g), 0) * 3.0;
    cross_entropy(log_softmax(matmul(h, w), -1), target).backward();
    for (const Tensor& t : {x, w, g}) EXPECT_EQ(t.grad().dtype(), dt);
    return std::vector<Tensor>{x.grad(), w.grad(), g.grad()};
  };
  std::vector<Tensor> g32 = grads(kFloat32), g64 = grads(kFloat64);
  for (size_t i = 0; i < g32.size(); ++i) {
    std::vector<double> a = g32[i].to(kFloat64).to_vector<double>();
    std::vector<double> b = g64[i].to_vector<double>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5) << i << " " << k;
  }
}

TEST(AutogradNN, SmallTransformerBlockEndToEnd) {
  // Embedding -> layer_norm -> attention -> linear -> cross_entropy, checked as one function.
  Tensor idx = from_vector<int64_t>({0, 2, 1, 2}, {4});
  Tensor target = from_vector<int64_t>({1, -100, 0, 2}, {4});
  expect_gradcheck(
      [&](const Inputs& x) {
        Tensor h = layer_norm(embedding(x[0], idx), {3}, x[1], x[2]);
        Tensor a = scaled_dot_product_attention(h, h, h, true) + h;
        return cross_entropy(linear(a, x[3]), target);
      },
      {leaf({3, 3}, -1, 1, 1), leaf({3}, 0.5, 1.5, 2), leaf({3}, -1, 1, 3),
       leaf({3, 3}, -1, 1, 4)});
}

}  // namespace
