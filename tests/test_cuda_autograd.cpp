// On a GPU: autograd on CUDA tensors. The backward rules run unchanged on the device; gradients
// equal the CPU's within the bound below; to(Device) is recorded and its gradient goes back to
// the source device both ways; backward()'s implicit seed is made on the root's device;
// gradients accumulate over backward calls on the device.
//
// Bound: every gradient here is a chain of at most three sums of K <= 64 terms (matmuls, their
// backward, a mean) and pointwise ops (gelu within 16 ulp on CUDA, docs/cuda.md), with inputs in
// [-1, 1]: |gpu - cpu| <= c K max(1, max|cpu|) with c = 1e-5 (Float32) or 1e-12 (Float64), the
// matmul tolerance of tests/test_matmul.cpp applied to the gradient's own scale.
//
// CudaAutograd.MlpStepMatchesTheCpu needs CUDA reductions (the bias gradient sums over the
// batch, the loss is a mean): it fails with "sum: not implemented for cuda:0" until they are in.
// The other tests need only pointwise ops, copies and matmul. Every test skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_device_util.h"
#include "expect_error.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using testing::kGpu;

Tensor make(const Shape& shape, DType dt, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return from_vector<double>(v, shape).to(dt);
}

// A leaf on `device` with t's values.
Tensor leaf(const Tensor& t, Device device) { return t.detach().to(device).requires_grad_(); }

void expect_close(const Tensor& cpu, const Tensor& gpu, int64_t K, const std::string& what) {
  ASSERT_TRUE(cpu.defined()) << what << ": no CPU gradient";
  ASSERT_TRUE(gpu.defined()) << what << ": no CUDA gradient";
  ASSERT_EQ(gpu.device(), kGpu) << what;
  ASSERT_EQ(cpu.device(), Device::cpu()) << what;
  ASSERT_EQ(gpu.sizes(), cpu.sizes()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  const std::vector<double> c = cpu.to(kFloat64).reshape({-1}).to_vector<double>();
  const std::vector<double> g = gpu.to(kCPU).to(kFloat64).reshape({-1}).to_vector<double>();
  double scale = 1;
  for (double v : c) scale = std::max(scale, std::fabs(v));
  const double tol = (cpu.dtype() == kFloat32 ? 1e-5 : 1e-12) * double(K) * scale;
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_LE(std::fabs(g[i] - c[i]), tol)
        << what << " at " << i << ": gpu " << g[i] << " cpu " << c[i];
}

// One MLP step on `device`: relu or gelu hidden layer, mse loss, backward. Returns the loss.
struct Mlp {
  Tensor w1, b1, w2, b2;
  Tensor step(const Tensor& x, const Tensor& t, bool use_gelu) const {
    Tensor h = x.matmul(w1) + b1;
    h = use_gelu ? gelu(h) : relu(h);
    Tensor y = h.matmul(w2) + b2;
    Tensor loss = mse_loss(y, t);
    loss.backward();
    return loss;
  }
};

TEST(CudaAutograd, MlpStepMatchesTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool use_gelu : {false, true}) {
      const std::string what =
          std::string(dtype_name(dt)) + (use_gelu ? " gelu" : " relu") + " MLP: ";
      const Tensor x = make({64, 32}, dt, 1), t = make({64, 8}, dt, 2);
      const Tensor w1 = make({32, 48}, dt, 3), b1 = make({48}, dt, 4);
      const Tensor w2 = make({48, 8}, dt, 5) * 0.5, b2 = make({8}, dt, 6);
      Mlp cpu{leaf(w1, kCPU), leaf(b1, kCPU), leaf(w2, kCPU), leaf(b2, kCPU)};
      Mlp gpu{leaf(w1, kGpu), leaf(b1, kGpu), leaf(w2, kGpu), leaf(b2, kGpu)};
      const Tensor lc = cpu.step(x, t, use_gelu);
      const Tensor lg = gpu.step(x.to(kGpu), t.to(kGpu), use_gelu);
      expect_close(lc, lg, 64, what + "loss");
      expect_close(cpu.w1.grad(), gpu.w1.grad(), 64, what + "w1");
      expect_close(cpu.b1.grad(), gpu.b1.grad(), 64, what + "b1");
      expect_close(cpu.w2.grad(), gpu.w2.grad(), 64, what + "w2");
      expect_close(cpu.b2.grad(), gpu.b2.grad(), 64, what + "b2");
    }
  }
}

TEST(CudaAutograd, PointwiseAndMatmulGradientsMatchTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    const std::string d(dtype_name(dt));
    const Tensor a = make({16, 24}, dt, 1), w = make({12, 24}, dt, 2), s = make({16, 12}, dt, 3);
    const Tensor g = make({16, 12}, dt, 4);
    // A linear layer (w used transposed), gelu, a product and relu: no reduction anywhere.
    auto run = [&](Device dev) {
      std::vector<Tensor> leaves = {leaf(a, dev), leaf(w, dev), leaf(s, dev)};
      Tensor y = gelu(leaves[0].matmul(leaves[1].t())) * leaves[2];
      Tensor z = relu(y) - y * 0.5;
      z.backward(g.to(dev));
      return leaves;
    };
    const std::vector<Tensor> c = run(kCPU), u = run(kGpu);
    expect_close(c[0].grad(), u[0].grad(), 24, d + " a");
    expect_close(c[1].grad(), u[1].grad(), 24, d + " w (transposed in the product)");
    expect_close(c[2].grad(), u[2].grad(), 24, d + " s");
    // Batched products of equal batch shapes (no sum_to) and a 2-D slice of a leaf.
    const Tensor p = make({3, 4, 5}, dt, 5), q = make({3, 5, 6}, dt, 6), h = make({3, 4, 6}, dt, 7);
    auto run_bmm = [&](Device dev) {
      std::vector<Tensor> leaves = {leaf(p, dev), leaf(q, dev)};
      Tensor y = bmm(leaves[0], leaves[1].slice(2, 0, 6)) * 2.0;
      y.backward(h.to(dev));
      return leaves;
    };
    const std::vector<Tensor> cb = run_bmm(kCPU), ub = run_bmm(kGpu);
    expect_close(cb[0].grad(), ub[0].grad(), 6, d + " bmm a");
    expect_close(cb[1].grad(), ub[1].grad(), 4, d + " bmm b");
  }
}

TEST(CudaAutograd, ToDeviceGradientFlowsBothWays) {
  KILN_SKIP_WITHOUT_GPU();
  // CPU leaf -> GPU -> back to the CPU.
  Tensor wc = from_vector<float>({1, 2, 3}, {3}).requires_grad_();
  Tensor on_gpu = wc.to(kGpu);
  EXPECT_EQ(on_gpu.grad_fn_name(), "ToDeviceBackward");
  Tensor y = (on_gpu * 3.0).to(kCPU);
  EXPECT_EQ(y.grad_fn_name(), "ToDeviceBackward");
  y.backward(from_vector<float>({1, 10, 100}, {3}));
  ASSERT_TRUE(wc.grad().defined());
  EXPECT_EQ(wc.grad().device(), Device::cpu());
  EXPECT_EQ(wc.grad().to_vector<float>(), std::vector<float>({3, 30, 300}));
  // GPU leaf -> CPU: the gradient comes back to the GPU.
  Tensor wg = from_vector<float>({1, 2, 3}, {3}).to(kGpu).requires_grad_();
  Tensor z = wg.to(kCPU) * 2.0;
  z.backward(ones({3}));
  ASSERT_TRUE(wg.grad().defined());
  EXPECT_EQ(wg.grad().device(), kGpu);
  EXPECT_EQ(wg.grad().to_vector<float>(), std::vector<float>({2, 2, 2}));
  // Views on either side: the slice's backward builds its zeros on the gradient's device.
  Tensor base = zeros({6}).requires_grad_();
  (base.slice(0, 0, 6, 2).to(kGpu) * 5.0).backward(ones({3}, TensorOptions().device(kGpu)));
  EXPECT_EQ(base.grad().to_vector<float>(), std::vector<float>({5, 0, 5, 0, 5, 0}));
  Tensor gbase = zeros({6}, TensorOptions().device(kGpu)).requires_grad_();
  (gbase.slice(0, 1, 6, 2).to(kCPU) * 7.0).backward(ones({3}));
  EXPECT_EQ(gbase.grad().device(), kGpu);
  EXPECT_EQ(gbase.grad().to_vector<float>(), std::vector<float>({0, 7, 0, 7, 0, 7}));
  // A non-leaf moved, and a move under NoGradGuard (not recorded).
  Tensor v = from_vector<double>({0.5, -1}, {2}).requires_grad_();
  Tensor m = (v * v).to(kGpu);
  (m * 1.0).backward(ones({2}, TensorOptions().dtype(kFloat64).device(kGpu)));
  EXPECT_EQ(v.grad().to_vector<double>(), std::vector<double>({1.0, -2.0}));
  {
    NoGradGuard no_grad;
    EXPECT_EQ(v.to(kGpu).grad_fn_name(), "");
    EXPECT_FALSE(v.to(kGpu).requires_grad());
  }
}

TEST(CudaAutograd, ImplicitSeedIsOnTheRootsDevice) {
  KILN_SKIP_WITHOUT_GPU();
  Tensor w = full({1}, 1.5, TensorOptions().device(kGpu)).requires_grad_();
  (w * w).backward();  // one element: the seed is ones on cuda:0
  EXPECT_EQ(w.grad().device(), kGpu);
  EXPECT_EQ(w.grad().to_vector<float>(), std::vector<float>({3.0f}));
  Tensor s = full({}, 2.0, TensorOptions().dtype(kFloat64).device(kGpu)).requires_grad_();
  (s * 4.0).backward();
  EXPECT_EQ(s.grad().item<double>(), 4.0);
  Tensor r = w * 2.0;
  testing::expect_error([&] { r.backward(ones({1})); }, "backward",
                        "the gradient is on cpu but the tensor is on cuda:0");
}

TEST(CudaAutograd, GradientsAccumulateOverTwoBackwardCalls) {
  KILN_SKIP_WITHOUT_GPU();
  const Tensor x = make({8, 24}, kFloat32, 1).to(kGpu);
  const Tensor g = make({8, 12}, kFloat32, 2).to(kGpu);
  Tensor w = leaf(make({24, 12}, kFloat32, 3), kGpu);
  x.matmul(w).backward(g);
  const std::vector<float> once = w.grad().to_vector<float>();
  // A second graph over the same leaf: the gradient adds up on the device (exactly: g + g).
  gelu(x.matmul(w)).detach();  // an unrelated op in between
  x.matmul(w).backward(g);
  EXPECT_EQ(w.grad().device(), kGpu);
  std::vector<float> twice = w.grad().to_vector<float>();
  for (size_t i = 0; i < once.size(); ++i) ASSERT_EQ(twice[i], 2 * once[i]) << i;
  // A third through a move to the CPU and back: the CPU gradient moves to the GPU and adds.
  (x.to(kCPU).matmul(w.to(kCPU))).backward(g.to(kCPU));
  EXPECT_EQ(w.grad().device(), kGpu);
  const std::vector<float> thrice = w.grad().to_vector<float>();
  for (size_t i = 0; i < once.size(); ++i)
    ASSERT_NEAR(thrice[i], 3 * once[i], 1e-5 * 8 * std::max(1.0f, std::fabs(once[i]))) << i;
  // Zeroed in place, one more backward gives one gradient again.
  {
    NoGradGuard no_grad;
    w.mutable_grad().zero_();
  }
  x.matmul(w).backward(g);
  EXPECT_EQ(w.grad().to_vector<float>(), once);
}

}  // namespace
}  // namespace kiln
