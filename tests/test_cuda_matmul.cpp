// On a GPU: matmul, mm and bmm on CUDA tensors against the CPU (tests/test_matmul.cpp checks the
// CPU against an independent reference). Every form torch.matmul has (1-D x 1-D, 1-D x 2-D,
// 2-D x 1-D, 2-D, batched with broadcast batch dims, a batch times a matrix), Float32, Float64,
// Int32 and Int64, operands transposed, sliced along columns, with a column step, expanded
// (stride 0), with permuted batch dims, sizes 1 to 513, empty dims and K = 0, errors.
//
// Bound (docs/testing.md, matmul): integers bitwise (both wrap); floats per element
//   |gpu - cpu| <= 2 (K + 1) u (|a| @ |b|),  u = 2^-24 (Float32) or 2^-53 (Float64),
// each side being within K u (|a| @ |b|) of the exact product in any summation order, with or
// without FMA. Float32 must not use TF32 (checked exactly). Every test skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda_device_util.h"
#include "expect_error.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using testing::kGpu;

using View = std::function<Tensor(const Tensor&)>;
const View kSame = [](const Tensor& t) { return t; };

// Floats in [-1, 1], integers in [-5, 5], on the CPU.
Tensor make(const Shape& shape, DType dt, unsigned seed) {
  std::mt19937 gen(seed);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  if (is_floating(dt)) {
    std::uniform_real_distribution<double> d(-1, 1);
    for (auto& x : v) x = d(gen);
  } else {
    std::uniform_int_distribution<int> d(-5, 5);
    for (auto& x : v) x = d(gen);
  }
  return from_vector<double>(v, shape).to(dt);
}

std::map<std::string, double> g_worst;  // the largest |gpu - cpu| / bound per dtype

// The GPU's result against the CPU's for the same operands.
void expect_matmul_match(const Tensor& a, const Tensor& b, const Tensor& gpu,
                         const std::string& what) {
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  const Tensor cpu = matmul(a, b);
  ASSERT_EQ(gpu.sizes(), cpu.sizes()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  const Tensor got = gpu.to(kCPU);
  if (!is_floating(cpu.dtype())) {
    EXPECT_EQ(got.to(kInt64).to_vector<int64_t>(), cpu.to(kInt64).to_vector<int64_t>()) << what;
    return;
  }
  const int64_t K = a.size(-1);
  const double u = cpu.dtype() == kFloat32 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  const std::vector<double> scale =
      matmul(a.abs().to(kFloat64), b.abs().to(kFloat64)).reshape({-1}).to_vector<double>();
  const std::vector<double> g = got.to(kFloat64).reshape({-1}).to_vector<double>();
  const std::vector<double> c = cpu.to(kFloat64).reshape({-1}).to_vector<double>();
  double& worst = g_worst[std::string(dtype_name(cpu.dtype()))];
  for (size_t i = 0; i < c.size(); ++i) {
    const double bound = 2.0 * double(K + 1) * u * scale[i];
    const double err = std::fabs(g[i] - c[i]);
    ASSERT_LE(err, bound) << what << " at " << i << ": gpu " << g[i] << " cpu " << c[i];
    if (bound > 0) worst = std::max(worst, err / bound);
  }
}

// a = av(abase), b = bv(bbase) on each device (views made on the device, so the GPU sees the
// same strides as the CPU), through `fn` (matmul by default).
void check(
    const Tensor& abase, const View& av, const Tensor& bbase, const View& bv,
    const std::string& what,
    const std::function<Tensor(const Tensor&, const Tensor&)>& fn =
        [](const Tensor& x, const Tensor& y) { return matmul(x, y); }) {
  const Tensor a = av(abase), b = bv(bbase);
  const Tensor ga = av(abase.to(kGpu)), gb = bv(bbase.to(kGpu));
  ASSERT_EQ(ga.strides(), a.strides()) << what;
  ASSERT_EQ(gb.strides(), b.strides()) << what;
  expect_matmul_match(a, b, fn(ga, gb), what);
}

void check(const Tensor& a, const Tensor& b, const std::string& what) {
  check(a, kSame, b, kSame, what);
}

constexpr DType kDtypes[] = {DType::Float32, DType::Float64, DType::Int32, DType::Int64};

TEST(CudaMatmul, EveryFormAndDtype) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType dt : kDtypes) {
    const std::string d(dtype_name(dt));
    for (int64_t k : {1, 7, 513}) {
      check(make({k}, dt, 1), make({k}, dt, 2), d + " 1-D x 1-D K=" + std::to_string(k));
      check(make({k}, dt, 3), make({k, 5}, dt, 4), d + " 1-D x 2-D K=" + std::to_string(k));
      check(make({6, k}, dt, 5), make({k}, dt, 6), d + " 2-D x 1-D K=" + std::to_string(k));
    }
    check(make({5, 7}, dt, 7), make({7, 3}, dt, 8), d + " 2-D");
    check(make({4, 5, 7}, dt, 9), make({4, 7, 3}, dt, 10), d + " batched");
    check(make({2, 1, 5, 7}, dt, 11), make({3, 7, 2}, dt, 12), d + " broadcast batch dims");
    check(make({3, 4, 5, 7}, dt, 13), make({7, 6}, dt, 14), d + " batch x matrix (folded)");
    check(make({5, 7}, dt, 15), make({3, 7, 6}, dt, 16), d + " matrix x batch");
    check(make({7}, dt, 17), make({2, 3, 7, 4}, dt, 18), d + " 1-D x batch");
    check(make({2, 3, 4, 7}, dt, 19), make({7}, dt, 20), d + " batch x 1-D");
    const Tensor x = make({4, 5, 7}, dt, 21), y = make({4, 7, 3}, dt, 22);
    check(x, kSame, y, kSame, d + " bmm",
          [](const Tensor& p, const Tensor& q) { return bmm(p, q); });
    check(x.select(0, 1), kSame, y.select(0, 2), kSame, d + " mm",
          [](const Tensor& p, const Tensor& q) { return mm(p, q); });
    check(x, kSame, y, kSame, d + " Tensor::matmul",
          [](const Tensor& p, const Tensor& q) { return p.matmul(q); });
  }
}

TEST(CudaMatmul, StridedOperandsAndBroadcastBatches) {
  KILN_SKIP_WITHOUT_GPU();
  const View t = [](const Tensor& v) { return v.transpose(-2, -1); };
  for (DType dt : kDtypes) {
    const std::string d(dtype_name(dt));
    check(make({7, 5}, dt, 1), t, make({7, 3}, dt, 2), kSame, d + " a transposed");
    check(make({5, 7}, dt, 3), kSame, make({3, 7}, dt, 4), t, d + " b transposed");
    check(make({7, 5}, dt, 5), t, make({3, 7}, dt, 6), t, d + " both transposed");
    check(make({4, 7, 5}, dt, 7), t, make({4, 3, 7}, dt, 8), t, d + " batched, both transposed");
    check(
        make({5, 12}, dt, 9), [](const Tensor& v) { return v.slice(1, 2, 9); },
        make({9, 8}, dt, 10), [](const Tensor& v) { return v.slice(0, 1, 8).slice(1, 3, 6); },
        d + " column slices");
    check(
        make({5, 14}, dt, 11), [](const Tensor& v) { return v.slice(1, 0, 14, 2); },
        make({7, 3}, dt, 12), kSame, d + " column step (copied)");
    check(
        make({5, 7}, dt, 13), kSame, make({7, 1}, dt, 14),
        [](const Tensor& v) {
          return v.expand({7, 4});
        },
        d + " stride-0 columns (copied)");
    check(
        make({4, 5, 7}, dt, 15), kSame, make({7, 3}, dt, 16),
        [](const Tensor& v) {
          return v.expand({4, 7, 3});
        },
        d + " expanded batch of b");
    check(
        make({3, 4, 5, 7}, dt, 17),
        [](const Tensor& v) {
          return v.permute({1, 0, 2, 3});
        },
        make({4, 3, 7, 2}, dt, 18), kSame, d + " permuted batch dims");
    check(
        make({2, 6, 5, 7}, dt, 19), [](const Tensor& v) { return v.slice(1, 1, 5, 2); },
        make({1, 2, 7, 3}, dt, 20), kSame, d + " batch step, broadcast b");
    check(
        make({4, 7, 5}, dt, 21), [](const Tensor& v) { return v.transpose(1, 2).slice(0, 1, 3); },
        make({7, 3}, dt, 22), kSame, d + " transposed batch slice x matrix");
  }
}

TEST(CudaMatmul, SizesFrom1To513) {
  KILN_SKIP_WITHOUT_GPU();
  const int64_t sizes[][3] = {{1, 1, 1},       {1, 513, 7},     {513, 1, 3},  {2, 3, 4},
                              {1, 1, 513},     {17, 31, 65},    {64, 64, 64}, {127, 129, 255},
                              {256, 256, 257}, {513, 511, 513}, {33, 1, 200}, {1, 200, 33}};
  for (DType dt : kDtypes) {
    for (const auto& s : sizes) {
      const std::string what = std::string(dtype_name(dt)) + " " + std::to_string(s[0]) + "x" +
                               std::to_string(s[2]) + " @ " + std::to_string(s[2]) + "x" +
                               std::to_string(s[1]);
      check(make({s[0], s[2]}, dt, 1), make({s[2], s[1]}, dt, 2), what);
    }
    check(make({3, 129, 65}, dt, 3), make({3, 65, 257}, dt, 4),
          std::string(dtype_name(dt)) + " batched 129x65x257");
  }
  for (const auto& [dt, w] : g_worst)
    std::printf("  %s: largest |gpu - cpu| is %.3g of the bound\n", dt.c_str(), w);
}

TEST(CudaMatmul, EmptyDimsAndZeroK) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType dt : kDtypes) {
    const std::string d(dtype_name(dt));
    // Dirty a cached block of the size class first: K = 0 must write zeros, not leave it.
    (void)(make({4, 5}, dt, 9).to(kGpu) + make({4, 5}, dt, 9).to(kGpu));
    check(make({4, 0}, dt, 1), make({0, 5}, dt, 2), d + " K = 0");
    check(make({3, 4, 0}, dt, 3), make({3, 0, 5}, dt, 4), d + " batched K = 0");
    check(make({0}, dt, 5), make({0}, dt, 6), d + " 1-D K = 0");
    check(make({0, 7}, dt, 7), make({7, 5}, dt, 8), d + " M = 0");
    check(make({4, 7}, dt, 9), make({7, 0}, dt, 10), d + " N = 0");
    check(make({0, 4, 7}, dt, 11), make({0, 7, 5}, dt, 12), d + " empty batch");
    check(make({2, 0, 4, 7}, dt, 13), make({7, 5}, dt, 14), d + " empty batch dim x matrix");
  }
}

TEST(CudaMatmul, IntegersWrapAndFloat32IsNotTf32) {
  KILN_SKIP_WITHOUT_GPU();
  // 2 * 2^40 wraps to 0 in 32 bits, as on the CPU.
  const Tensor a = from_vector<int32_t>({1 << 20, 1 << 20}, {1, 2});
  const Tensor b = from_vector<int32_t>({1 << 20, 1 << 20}, {2, 1});
  EXPECT_EQ(matmul(a.to(kGpu), b.to(kGpu)).to_vector<int32_t>(), std::vector<int32_t>{0});
  const Tensor a64 = from_vector<int64_t>({INT64_MAX, 3}, {1, 2});
  const Tensor b64 = from_vector<int64_t>({2, INT64_MAX}, {2, 1});
  check(a64, b64, "Int64 wrapping");
  // TF32 keeps 10 mantissa bits: 1 + 2^-12 would round to 1 and each sum be 256. In FP32 every
  // partial sum k (1 + 2^-12) is exact: 256 + 2^-4.
  const Tensor x = full({256, 256}, 1.0 + std::ldexp(1.0, -12), TensorOptions().device(kGpu));
  const Tensor y = ones({256, 256}, TensorOptions().device(kGpu));
  const std::vector<float> r = matmul(x, y).to_vector<float>();
  for (float v : r) ASSERT_EQ(v, 256.0625f) << "Float32 matmul on CUDA used reduced precision";
}

TEST(CudaMatmul, SameErrorsAsTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  const TensorOptions g = TensorOptions().device(kGpu);
  const Tensor f = ones({2, 3}, g);
  testing::expect_error([&] { matmul(f, ones({2, 3}, g)); }, "matmul", "cannot be multiplied");
  testing::expect_error([&] { matmul(f, ones({3, 2}, g).to(kFloat64)); }, "matmul", "same dtype");
  testing::expect_error([&] { matmul(f.to(kBool), ones({3, 2}, g).to(kBool)); }, "matmul", "Bool");
  testing::expect_error([&] { matmul(ones({}, g), f); }, "matmul", "at least 1 dimension");
  testing::expect_error(
      [&] {
        bmm(ones({2, 2, 3}, g), ones({3, 3, 2}, g));
      },
      "bmm", "batch sizes differ");
  testing::expect_error([&] { mm(ones({2, 2, 3}, g), f); }, "mm", "2-D");
  testing::expect_error([&] { matmul(f, ones({3, 2})); }, "matmul", "cuda:0");
}

}  // namespace
}  // namespace kiln
