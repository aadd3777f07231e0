// Factories: arange, linspace, eye (ops/ranges.cpp) and empty/zeros/ones/full/from_vector/*_like
// (ops/factories.cpp), against scalar references written here. Exact comparisons unless noted.
#include <gtest/gtest.h>

#include <cmath>

#include "expect_error.h"
#include "kiln/kiln.h"
#include "runtime/dispatcher.h"

using namespace kiln;
using kiln::testing::expect_error;

namespace {}  // namespace

TEST(Arange, DtypeInference) {
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 5, 1).dtype(), kInt64);
  EXPECT_EQ(arange(5.0).dtype(), kFloat32);
  EXPECT_EQ(arange(0, 5, 0.5).dtype(), kFloat32);
  EXPECT_EQ(arange(0.5, 5, 1).dtype(), kFloat32);
  EXPECT_EQ(arange(5, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(arange(0, 5, 1, kInt32).dtype(), kInt32);
}

TEST(Arange, IntegerValues) {
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(2, 11, 3).to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(arange(10, 0, -3).to_vector<int64_t>(), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(arange(-3, 3, 2, kInt32).to_vector<int32_t>(), (std::vector<int32_t>{-3, -1, 1}));
  EXPECT_EQ(arange(0).numel(), 0);
  EXPECT_EQ(arange(4, 4).numel(), 0);
  // Large values stay exact in int64 (not via double).
  int64_t big = (int64_t(1) << 60) + 1;
  EXPECT_EQ(arange(big, big + 3, 1).to_vector<int64_t>(),
            (std::vector<int64_t>{big, big + 1, big + 2}));
}

TEST(Arange, FloatValues) {
  // Length ceil((end-start)/step); value start + i*step computed in double, then rounded.
  struct Case {
    double s, e, st;
  };
  for (Case c : {Case{0, 1, 0.1}, Case{1, -1, -0.3}, Case{0.5, 2.5, 0.25}, Case{-2, 2, 0.7}}) {
    int64_t n = static_cast<int64_t>(std::ceil((c.e - c.s) / c.st));
    Tensor f = arange(c.s, c.e, c.st);
    Tensor d = arange(c.s, c.e, c.st, kFloat64);
    ASSERT_EQ(f.numel(), n);
    ASSERT_EQ(d.numel(), n);
    auto vf = f.to_vector<float>();
    auto vd = d.to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(vd[i], c.s + static_cast<double>(i) * c.st);
      EXPECT_EQ(vf[i], static_cast<float>(c.s + static_cast<double>(i) * c.st));
    }
  }
  // Integer bounds with a float dtype, and float bounds with an integer dtype (truncation).
  EXPECT_EQ(arange(3, kFloat32).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(arange(0.0, 2.0, 0.5, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1}));
}

TEST(Arange, LargeIsParallelAndCorrect) {
  const int64_t n = 200000;
  auto v = arange(n).to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i);
}

TEST(Arange, Errors) {
  expect_error([] { arange(0, 5, 0); }, "arange", "step must be nonzero");
  expect_error([] { arange(0.0, 5.0, 0.0); }, "arange", "step must be nonzero");
  expect_error([] { arange(5, 0, 1); }, "arange", "inconsistent with step sign");
  expect_error([] { arange(0, 5, -1); }, "arange", "inconsistent with step sign");
  expect_error([] { arange(0.0, INFINITY, 1.0); }, "arange", "finite");
  expect_error([] { arange(0.0, NAN, 1.0); }, "arange", "finite");
  expect_error([] { arange(5, kBool); }, "arange", "Bool");
  // Without a usable GPU a CUDA factory says why (with one, arange runs there: test_cuda_index).
  if (!cuda_is_available())
    expect_error([] { arange(5, TensorOptions(Device::cuda())); }, "arange", "cuda");
  // The meta function validates too (what a replayed, recorded op relies on).
  Attrs a;
  a.dims = {3};
  a.scalars = {Scalar(0), Scalar(0)};
  a.dtype = kInt64;
  expect_error([&] { dispatch(OpId::Arange, {}, a); }, "arange", "nonzero");
}

TEST(Linspace, Values) {
  // torch's symmetric formula: step = (end-start)/(steps-1); i < steps/2 counts from start,
  // the rest from end. Float32 computes in float, Float64 in double.
  for (int64_t steps : {2, 3, 5, 10, 11, 100}) {
    for (auto [s, e] : std::initializer_list<std::pair<double, double>>{
             {0.0, 1.0}, {-3.5, 7.25}, {10.0, -10.0}}) {
      auto vf = linspace(s, e, steps).to_vector<float>();
      auto vd = linspace(s, e, steps, kFloat64).to_vector<double>();
      float sf = float(s), ef = float(e), stf = (ef - sf) / float(steps - 1);
      double std_ = (e - s) / double(steps - 1);
      for (int64_t i = 0; i < steps; ++i) {
        float rf = i < steps / 2 ? sf + stf * float(i) : ef - stf * float(steps - 1 - i);
        double rd = i < steps / 2 ? s + std_ * double(i) : e - std_ * double(steps - 1 - i);
        EXPECT_EQ(vf[i], rf) << steps << " " << i;
        EXPECT_EQ(vd[i], rd) << steps << " " << i;
      }
      EXPECT_EQ(vf.front(), float(s));
      EXPECT_EQ(vf.back(), float(e));
    }
  }
  EXPECT_EQ(linspace(2.5, 9, 1).to_vector<float>(), (std::vector<float>{2.5f}));
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_EQ(linspace(0, 1, 0).dtype(), kFloat32);
  // Integer dtypes: step in double, values truncated (torch.linspace(0, 10, 5, dtype=int64)).
  EXPECT_EQ(linspace(0, 10, 5, kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 2, 5, 7, 10}));
  EXPECT_EQ(linspace(-1, 1, 3, kInt32).to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 1}));
}

TEST(Linspace, Errors) {
  expect_error([] { linspace(0, 1, -1); }, "linspace", "non-negative");
  expect_error([] { linspace(0, 1, 3, kBool); }, "linspace", "Bool");
}

TEST(Eye, EveryDtype) {
  for (DType dt : {kBool, kInt32, kInt64, kFloat32, kFloat64}) {
    for (int64_t n : {0, 1, 3, 5}) {
      Tensor t = eye(n, dt);
      EXPECT_EQ(t.dtype(), dt);
      EXPECT_EQ(t.sizes(), (Shape{n, n}));
      auto v = t.to_vector<double>();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) EXPECT_EQ(v[i * n + j], i == j ? 1.0 : 0.0);
    }
  }
  EXPECT_EQ(eye(3).dtype(), kFloat32);
  expect_error([] { eye(-1); }, "eye", "non-negative");
}

TEST(Factories, FullZerosOnes) {
  EXPECT_EQ(zeros({2, 3}).to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(ones({4}, kInt32).to_vector<int32_t>(), std::vector<int32_t>(4, 1));
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);  // full takes the value's kind
  EXPECT_EQ(full({2}, 7.5).dtype(), kFloat32);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(full({2}, 2.5, kFloat64).to_vector<double>(), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(zeros({}).dim(), 0);
  EXPECT_EQ(zeros({0, 3}).numel(), 0);
  EXPECT_EQ(empty({2, 5}, kInt64).sizes(), (Shape{2, 5}));
  Tensor x = from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}).t();
  EXPECT_EQ(zeros_like(x).sizes(), (Shape{3, 2}));
  EXPECT_EQ(ones_like(x).dtype(), kInt32);
  EXPECT_EQ(full_like(x, 9).to_vector<int32_t>(), std::vector<int32_t>(6, 9));
  EXPECT_EQ(empty_like(x).dtype(), kInt32);
  EXPECT_EQ(scalar_tensor(3.5).item<float>(), 3.5f);
  expect_error([] { zeros({2, -1}); }, "zeros", "negative size");
  expect_error([] { ones({-1}); }, "ones", "negative size");
  expect_error([] { full({-1}, 2.0); }, "full", "negative size");
  // A device index past the last one, with or without a GPU.
  expect_error([] { zeros({2}, TensorOptions(Device::cuda(99))); }, "zeros", "not available");
  expect_error([] { empty({-2}); }, "empty", "negative size");
  expect_error([] { zeros_like(Tensor()); }, "zeros_like", "undefined");
  expect_error([] { ones_like(Tensor()); }, "ones_like", "undefined");
  expect_error([] { empty_like(Tensor()); }, "empty_like", "undefined");
  expect_error([] { full_like(Tensor(), 1); }, "full_like", "undefined");
  expect_error([] { from_vector<float>({1, 2, 3}, {2, 2}); }, "from_vector", "do not fill");
}

TEST(Factories, FromVectorDtypes) {
  EXPECT_EQ(from_vector<bool>({true, false}, {2}).to_vector<bool>(),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(from_vector<int64_t>({1, 2}, {2}, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(from_vector<double>({1.5, 2.5}, {2}).to_vector<double>(),
            (std::vector<double>{1.5, 2.5}));
}
