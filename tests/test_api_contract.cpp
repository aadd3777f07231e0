// Every name of ../shared/API.md, called as that page spells it: programs outside the repo are
// written against these signatures, so this file failing to compile is a broken contract.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/kiln.h"

namespace {

TEST(ApiContract, TypesAndTensor) {
  using namespace kiln;
  static_assert(kBool == DType::Bool && kInt32 == DType::Int32 && kInt64 == DType::Int64);
  static_assert(kFloat32 == DType::Float32 && kFloat64 == DType::Float64);
  Device cpu = Device::cpu();
  EXPECT_FALSE(cpu.is_cuda());
  EXPECT_TRUE(Device::cuda(0).is_cuda());
  EXPECT_EQ(cuda_is_available(), cuda_device_count() > 0);
  EXPECT_EQ(cuda_is_available(), cuda_unavailable_reason().empty());
  TensorOptions opts = TensorOptions().dtype(kFloat64).device(Device::cpu()).requires_grad(false);
  Shape shape = {2, 3};

  Tensor u;
  EXPECT_FALSE(u.defined());
  Tensor x = zeros(shape, opts) + 1.5;
  EXPECT_EQ(x.dim(), 2);
  EXPECT_EQ(x.sizes(), shape);
  EXPECT_EQ(x.size(1), 3);
  EXPECT_EQ(x.strides(), (Shape{3, 1}));
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.dtype(), kFloat64);
  EXPECT_EQ(x.device(), cpu);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_EQ(x[0][0].item<double>(), 1.5);
  EXPECT_EQ(x.to_vector<double>().size(), 6u);
  EXPECT_NE(x.data_ptr<double>(), nullptr);
  if (!cuda_is_available()) {
    EXPECT_THROW(x.to(kCUDA), Error);
  }
  EXPECT_EQ(x.to(kFloat32).dtype(), kFloat32);
  EXPECT_TRUE(x.contiguous().is_same_storage(x));
  EXPECT_FALSE(x.clone().is_same_storage(x));

  Tensor v = x.view({3, 2}).reshape({6}).reshape({2, 3}).transpose(0, 1).permute({1, 0}).t();
  v = v.unsqueeze(0).squeeze(0).expand({2, 3, 2}).flatten(0, -1);
  v = x.slice(1, 0, 3, 2).select(0, 1).narrow(0, 0, 1);
  EXPECT_EQ(v.numel(), 1);

  Tensor w = ones({3}, kFloat64).requires_grad_();
  EXPECT_TRUE(w.requires_grad());
  (w * w).sum().backward();
  EXPECT_TRUE(w.grad().defined());
  w.backward(ones({3}, kFloat64));
  EXPECT_FALSE(w.detach().requires_grad());

  Tensor y = zeros({3});
  Tensor o = ones({3});
  y.add_(o, 2).sub_(o, 1).mul_(o).div_(o).mul_(2.0).add_(1.0);
  y.zero_().fill_(3.0).copy_(o).clamp_(0.0, 0.5).relu_().masked_fill_(o > 0.0, 7.0);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{7, 7, 7}));

  Tensor z = x.exp() + x.sum() + x.sum({1}, true) + x.matmul(x.t()).sum() + x.softmax(-1);
  z = (x + x) - (x * 2.0) / (2.0 + x) - -x;
  Tensor b = (x == x) != (x < 1.0);
  b = logical_and(x <= x, x > 0.0);
  b = x >= 2.0;
  std::ostringstream os;
  os << z;
  EXPECT_FALSE(os.str().empty());
}

TEST(ApiContract, Functions) {
  using namespace kiln;
  manual_seed(1);
  Tensor a = arange(6.0).reshape({2, 3}), b = arange(0.0, 3.0, 1.0), c = linspace(0, 1, 3);
  Tensor e = eye(3), r = rand({2, 3}), n = randn({2, 3}), i = randint(0, 5, {4});
  EXPECT_EQ(i.dtype(), kInt64);
  Tensor f = from_vector<float>({1, 2}, {2}), g = full({2}, 3.0), h = empty({2});
  for (const Tensor& t :
       {zeros_like(a), ones_like(a), empty_like(a), rand_like(a), randn_like(a), full_like(a, 2.0)})
    EXPECT_EQ(t.sizes(), a.sizes());

  Tensor p = add(a, b) + sub(a, b) + mul(a, b) + div(a, b + 1.0) + neg(a) + abs(a) + exp(a) +
             log(a + 1.0) + log1p(a) + expm1(a) + sqrt(a) + rsqrt(a + 1.0) + reciprocal(a + 1.0) +
             sin(a) + cos(a) + tanh(a) + sigmoid(a) + relu(a) + silu(a) + erf(a) + floor(a) +
             ceil(a) + round(a) + sign(a) + pow(a, 2.0) + pow(a, a) + maximum(a, b) +
             minimum(a, b) + clamp(a, 0.0, 1.0) + gelu(a) + gelu(a, "tanh") + where(a > 1.0, a, b);
  Tensor q = logical_or(logical_and(eq(a, b), ne(a, b)), logical_or(lt(a, b), le(a, b)));
  q = logical_or(logical_or(q, logical_not(gt(a, b))), logical_or(ge(a, b), isnan(p)));
  (void)q;
  Tensor s = sum(a) + sum(a, {1}).sum() + mean(a) + prod(a + 1.0) + amax(a) + amin(a) +
             logsumexp(a, {1}).sum() + argmax(a, 1).sum() + argmin(a, 1, true).sum() +
             var(a, {1}).sum() + kiln::std(a, {0}, false, true).sum();
  EXPECT_TRUE(all(a >= 0.0).item<bool>());
  EXPECT_TRUE(any(a > 4.0).item<bool>());
  Tensor m = matmul(a, a.t()) + mm(a, a.t()) + bmm(a.unsqueeze(0), a.t().unsqueeze(0))[0];
  Tensor nn = softmax(a, 1) + log_softmax(a, 1) + layer_norm(a, {3}, ones({3}), zeros({3}), 1e-5) +
              linear(a, ones({3, 3}), zeros({3})) + dropout(a, 0.5, false);
  Tensor ce = cross_entropy(a, from_vector<int64_t>({0, 2}, {2})) + mse_loss(a, a * 2.0);
  Tensor emb = embedding(ones({4, 3}), from_vector<int64_t>({0, 3}, {2}));
  Tensor att = scaled_dot_product_attention(a.unsqueeze(0), a.unsqueeze(0), a.unsqueeze(0), true);
  Tensor sh = cat({a, a}, 0).narrow(0, 0, 2) + stack({a, a}, 0).sum({0});
  std::vector<Tensor> parts = split(a, 1, 1), chunks = chunk(a, 2, 0);
  Tensor idx = from_vector<int64_t>({0, 1}, {2});
  Tensor ix =
      index_select(a, 1, idx) + gather(a, 1, idx.reshape({2, 1}).expand({2, 1}).contiguous());
  Tensor sa = scatter_add(a, 1, idx.reshape({2, 1}), ones({2, 1}));
  Tensor oh = one_hot(idx, 3), lo = tril(a), up = triu(a, 1), mf = masked_fill(a, a > 2.0, 0.0);
  EXPECT_TRUE(allclose(a, a.clone()));
  EXPECT_TRUE(allclose(a, a + 1e-9, 1e-5, 1e-8));
  kiln::sync();  // qualified: ::sync() from <unistd.h> is also visible
  {
    NoGradGuard guard;
    EXPECT_FALSE((ones({1}).requires_grad_() * 2.0).requires_grad());
  }
  (void)s, (void)m, (void)nn, (void)ce, (void)emb, (void)att, (void)sh, (void)ix, (void)sa;
  (void)oh, (void)lo, (void)up, (void)mf, (void)c, (void)e, (void)r, (void)n, (void)f, (void)g;
  (void)h;
}

TEST(ApiContract, Optimizers) {
  using namespace kiln;
  Tensor p = ones({2}).requires_grad_();
  optim::SGD sgd({p}, optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4));
  optim::Adam adam({p}, optim::AdamOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0));
  sgd.zero_grad();
  (p * p).sum().backward();
  sgd.step();
  adam.zero_grad();
  (p * p).sum().backward();
  adam.step();
  EXPECT_LT(p.to_vector<float>()[0], 1.0f);
}

}  // namespace
