// Degenerate arguments raise a kiln::Error naming the op (each case was once a crash, a wrapped
// size or a message naming the wrong op): shapes whose element count or byte size overflows
// int64, huge slice steps, narrow/chunk arguments near INT64_MAX, integer ranges whose values do
// not fit the dtype, undefined tensors, a bias or gradient of the wrong shape. Runs in both
// modes (KILN_JIT=0 and 1): the checks are in meta functions and the public functions.
#include <gtest/gtest.h>

#include <cstdint>

#include "expect_error.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using testing::expect_error;

// 16777232 * 1099510579201 = 2^64 + 16: the element count would wrap to 16.
constexpr int64_t kWrapA = 16777232;
constexpr int64_t kWrapB = 1099510579201;
constexpr int64_t kBig = int64_t(1) << 32;

TEST(DegenerateArguments, ShapesWhoseElementCountOverflows) {
  expect_error(
      [] {
        Tensor z = zeros({kWrapA, kWrapB});
        (void)z[5][7].item<float>();
      },
      "zeros");
  expect_error([] { zeros({kBig, kBig}); }, "zeros");
  expect_error([] { ones({kBig, kBig}); }, "ones");
  expect_error([] { eye(kBig); }, "eye");
  expect_error([] { rand({kWrapA, kWrapB}); }, "rand");
  expect_error([] { from_vector<float>({}, {kBig, kBig}); }, "from_vector");
  expect_error([] { ones({1}).expand({kWrapA, kWrapB}).sum().item<float>(); }, "expand");
  // An expanded view allocates nothing: only its element count must fit.
  EXPECT_EQ(ones({1}).expand({kBig, kBig / 4}).numel(), kBig * (kBig / 4));  // 2^61
}

TEST(DegenerateArguments, ShapesWhoseByteSizeOverflows) {
  expect_error([] { arange(0, int64_t(1) << 62).sum().item<int64_t>(); }, "arange");
  expect_error([] { linspace(0, 1, int64_t(1) << 62).sum().item<float>(); }, "linspace");
}

TEST(DegenerateArguments, SliceNarrowAndChunkNearInt64Max) {
  Tensor x = ones({2, 3});
  EXPECT_EQ(x.slice(0, 0, INT64_MAX, INT64_MAX).sizes(), (Shape{1, 3}));
  EXPECT_EQ(x.slice(1, 0, 3, INT64_MAX - 1).sizes(), (Shape{2, 1}));
  expect_error([&] { x.narrow(0, INT64_MAX, 1); }, "narrow");
  expect_error([&] { x.narrow(0, 1, INT64_MAX); }, "narrow");
  std::vector<Tensor> parts = chunk(x, INT64_MAX);  // as libtorch: one piece per row
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].sizes(), (Shape{1, 3}));
  EXPECT_EQ(split(x, INT64_MAX, 1).size(), 1u);
}

TEST(DegenerateArguments, IntegerRangesMustFitTheDType) {
  expect_error([] { arange(0, 4e9, 1e9, kInt32); }, "arange");
  expect_error([] { linspace(0, 3e9, 4, kInt32); }, "linspace");
  EXPECT_EQ(arange(0, 3e9, 1e9, kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1000000000, 2000000000}));
}

TEST(DegenerateArguments, UndefinedTensorsNameTheOp) {
  Tensor u, x = ones({2, 3});
  expect_error([&] { ones({2, 3}).expand_as(u); }, "expand_as");
  expect_error([&] { linear(x, u); }, "linear");
  expect_error([&] { dropout(u, 0.5, true); }, "dropout");
  expect_error([&] { scaled_dot_product_attention(u, x, x); }, "scaled_dot_product_attention");
  expect_error([&] { u.reshape({1}); }, "reshape");
  expect_error([&] { u.item<float>(); }, "item");
  expect_error([&] { u.backward(); }, "backward");
}

TEST(DegenerateArguments, WrongBiasOrGradientShapeNamesTheCaller) {
  expect_error([] { linear(ones({3}), ones({4, 3}), ones({5})); }, "linear");
  for (bool adam : {false, true}) {
    expect_error(
        [adam] {
          Tensor w = ones({2}).requires_grad_();
          (w * w).sum().backward();
          w.mutable_grad() = ones({3});
          if (adam) {
            optim::Adam opt({w}, optim::AdamOptions(0.1));
            opt.step();
          } else {
            optim::SGD opt({w}, optim::SGDOptions(0.1));
            opt.step();
          }
        },
        adam ? "Adam" : "SGD");
  }
}

}  // namespace
}  // namespace kiln
