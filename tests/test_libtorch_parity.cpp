// Edges where kiln follows libtorch's behaviour (each found by review, each once wrong here):
// scalars that do not fit the dtype they are converted to raise (c10's checked_convert), the
// out-of-place masked_fill broadcasts its input against the mask, d pow(0, e)/de is 0 where
// e >= 0, and dropout's dropped elements are x * 0. The suite runs with KILN_JIT=0 and 1: meta
// functions and kernels are shared, so both modes must agree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "expect_error.h"
#include "kiln/kiln.h"

namespace kiln::testing {
namespace {

// libtorch: "value cannot be converted to type int32_t without overflow". kiln raises at the call
// (in the meta function) instead of wrapping the bound (3e9 became -1294967296 and every element
// was "clamped" to it).
TEST(LibtorchParity, ClampBoundOutsideTheDTypeRaises) {
  Tensor x = from_vector<int32_t>({1, 2, 3}, {3});
  expect_error([&] { (void)clamp(x, 0, 3e9); }, "clamp: max 3000000000", "Int32");
  expect_error([&] { (void)clamp(x, -3e9, 2); }, "clamp: min", "Int32");
  EXPECT_EQ(clamp(x, 0, 2).to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 2}));
  // A fractional bound promotes to Float32 (no narrowing), as in libtorch.
  EXPECT_EQ(clamp(x, 0, 2.5).to_vector<float>(), (std::vector<float>{1, 2, 2.5}));
  EXPECT_EQ(clamp(from_vector<float>({1, 2}, {2}), -INFINITY, 1).to_vector<float>(),
            (std::vector<float>{1, 1}));
}

// Out-of-range doubles converted to an integer are undefined behaviour in C++ (x86 gave
// INT_MIN); NaN has no integer value; a finite double beyond Float32's range overflows it.
TEST(LibtorchParity, FillValueOutsideTheDTypeRaises) {
  expect_error([] { (void)full({2}, 3e9, kInt32); }, "full", "Int32");
  expect_error([] { zeros({2}, kInt32).fill_(3e9); }, "full", "Int32");
  expect_error([] { (void)full({2}, 1e300, kFloat32); }, "full", "Float32");
  expect_error([] { (void)full({2}, NAN, kInt64); }, "full", "Int64");
  Tensor x = from_vector<int32_t>({1, 2}, {2});
  Tensor mask = from_vector<bool>({true, false}, {2});
  expect_error([&] { (void)masked_fill(x, mask, NAN); }, "masked_fill", "Int32");
  expect_error([&] { (void)masked_fill(x, mask, int64_t{3000000000}); }, "masked_fill", "Int32");
  // Values that fit, infinities in floats, and anything into Bool are fine.
  EXPECT_EQ(full({1}, 2147483647, kInt32).to_vector<int32_t>(), (std::vector<int32_t>{2147483647}));
  EXPECT_TRUE(std::isinf(full({1}, INFINITY, kFloat32).to_vector<float>()[0]));
  EXPECT_EQ(full({1}, 5, kBool).to_vector<bool>(), (std::vector<bool>{true}));
  EXPECT_EQ(masked_fill(x, mask, -7).to_vector<int32_t>(), (std::vector<int32_t>{-7, 2}));
}

// libtorch: pow_backward_exponent masks base == 0 && e >= 0 (the gradient was [-inf, nan, nan]).
TEST(LibtorchParity, PowOfZeroScalarBaseHasZeroExponentGradient) {
  Tensor e = from_vector<float>({0.0f, 1.0f, 2.0f}, {3}).requires_grad_();
  pow(0.0, e).sum().backward();
  EXPECT_EQ(e.grad().to_vector<float>(), (std::vector<float>{0.0f, 0.0f, 0.0f}));
  Tensor e2 = from_vector<float>({0.0f, 1.0f, 2.0f}, {3}).requires_grad_();
  pow(zeros({3}), e2).sum().backward();
  EXPECT_EQ(e2.grad().to_vector<float>(), e.grad().to_vector<float>());
}

// libtorch's at::masked_fill expands self against the mask; only masked_fill_ needs the mask to
// broadcast to self. The gradient sums back to the input's shape.
TEST(LibtorchParity, MaskedFillBroadcastsTheInputAgainstTheMask) {
  Tensor x = from_vector<float>({1, 2, 3}, {3}).requires_grad_();
  Tensor mask = from_vector<bool>({true, false, true, false, false, false}, {2, 3});
  Tensor y = masked_fill(x, mask, 5.0);
  ASSERT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{5, 2, 5, 1, 2, 3}));
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 2, 1}));
  Tensor z = from_vector<float>({1, 2, 3}, {3});
  expect_error([&] { z.masked_fill_(mask, 5.0); }, "masked_fill");
}

// libtorch (CPU) multiplies: a dropped element is x * 0 (NaN for NaN or inf, -0 for x < 0).
TEST(LibtorchParity, DroppedElementsAreXTimesZero) {
  Tensor x = from_vector<float>({NAN, -1.0f, INFINITY}, {3});
  std::vector<float> y = dropout(x, 1.0, true).to_vector<float>();
  ASSERT_EQ(y.size(), 3u);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(y[1] == 0.0f && std::signbit(y[1]));
  EXPECT_TRUE(std::isnan(y[2]));
  // With 0 < p < 1 the dropped ones of many elements are -0 for a negative input.
  manual_seed(3);
  std::vector<float> z = dropout(full({256}, -2.0), 0.5, true).to_vector<float>();
  int dropped = 0;
  for (float v : z)
    if (v == 0.0f) dropped += std::signbit(v) ? 1 : 1000;
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 1000) << "a dropped element of -2 must be -0";
}

}  // namespace
}  // namespace kiln::testing
