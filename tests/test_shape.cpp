// cat, stack, split, chunk against scalar references on every dtype and layout. All values are
// small integers, exact in every dtype, so every comparison is exact (no tolerance).
#include <gtest/gtest.h>

#include "layout_util.h"
#include "op_matrix.h"

using namespace kiln;
using namespace kt;

namespace {

// Reference cat: element idx of the result comes from the input whose range along dim holds it.
void check_cat(const std::vector<Tensor>& xs, int64_t dim, const Tensor& out) {
  int64_t d = dim < 0 ? dim + out.dim() : dim;
  for (const auto& idx : all_indices(out.sizes())) {
    int64_t pos = idx[d];
    for (const Tensor& x : xs) {
      if (x.dim() == 1 && x.size(0) == 0) continue;
      if (pos < x.size(d)) {
        auto src = idx;
        src[d] = pos;
        ASSERT_EQ(at(out, idx), at(x, src)) << "at dim " << d;
        break;
      }
      pos -= x.size(d);
    }
  }
}

}  // namespace

TEST(ShapeCat, EveryDTypeLayoutAndDim) {
  const Shape base = {3, 4, 5};
  for (DType dt : kAllDTypes)
    for (Layout l : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3}) {
        SCOPED_TRACE(fmt::format("{} {} dim {}", dt, layout_name(l), dim));
        int64_t d = dim < 0 ? dim + 3 : dim;
        std::vector<Tensor> xs;
        for (int k = 0; k < 3; ++k) {
          Shape s = base;
          s[d] = k + 1;
          // Mix layouts: the middle input is always contiguous, so both kernels paths meet.
          xs.push_back(make(s, dt, k == 1 ? Layout::Contiguous : l, k));
        }
        Tensor out = kiln::testing::run_in_all_modes("cat", [&] { return cat(xs, dim); });
        Shape want = base;
        want[d] = 6;
        ASSERT_EQ(out.sizes(), want);
        ASSERT_EQ(out.dtype(), dt);
        check_cat(xs, dim, out);
      }
}

TEST(ShapeCat, ContiguousFastPathAndParallel) {
  for (int64_t dim : {0, 1}) {
    std::vector<Tensor> xs = {filled({300, 700}, DType::Float32, 1),
                              filled({300, 700}, DType::Float32, 2)};
    Tensor out = cat(xs, dim);
    check_cat(xs, dim, out);
    // A transposed input takes the strided path with the same large sizes.
    xs[1] = make({300, 700}, DType::Float32, Layout::Transposed, 3);
    check_cat(xs, dim, cat(xs, dim));
  }
}

TEST(ShapeCat, TypePromotion) {
  Tensor a = make({2, 3}, DType::Int32, Layout::Contiguous, 1);
  Tensor b = make({1, 3}, DType::Float64, Layout::Sliced, 2);
  Tensor c = make({2, 3}, DType::Bool, Layout::Contiguous, 3);
  Tensor out = cat({a, b, c}, 0);
  EXPECT_EQ(out.dtype(), DType::Float64);
  check_cat({a, b, c}, 0, out);
  EXPECT_EQ(cat({c, a}, 1).dtype(), DType::Int32);
  EXPECT_EQ(cat({c, c}, 1).dtype(), DType::Bool);
  check_cat({c, a}, 1, cat({c, a}, 1));
}

TEST(ShapeCat, LegacyEmptyAndZeroSize) {
  Tensor x = filled({2, 3}, DType::Float32, 1);
  Tensor legacy = empty({0}, DType::Float64);
  // The 1-D empty tensor is skipped for shapes but still promotes the dtype.
  Tensor out = cat({legacy, x, legacy}, 1);
  EXPECT_EQ(out.sizes(), (Shape{2, 3}));
  EXPECT_EQ(out.dtype(), DType::Float64);
  check_cat({legacy, x, legacy}, 1, out);
  // Every input a legacy empty tensor: the result is [0] (dim is not checked, as in PyTorch).
  EXPECT_EQ(cat({legacy, legacy}, 5).sizes(), (Shape{0}));
  // Other empty shapes take part normally.
  Tensor z = empty({0, 3}, DType::Float32);
  Tensor o = cat({z, x, z}, 0);
  EXPECT_EQ(o.sizes(), (Shape{2, 3}));
  check_cat({z, x, z}, 0, o);
  EXPECT_EQ(cat({z, z}, 1).sizes(), (Shape{0, 6}));
  EXPECT_EQ(cat({empty({2, 0}), empty({2, 0})}, 1).sizes(), (Shape{2, 0}));
  // 1-D cat of vectors, one empty.
  Tensor v = filled({4}, DType::Int64, 2);
  check_cat({v, legacy.to(DType::Int64), v}, 0, cat({v, legacy.to(DType::Int64), v}, 0));
}

TEST(ShapeCat, Errors) {
  Tensor x = filled({2, 3}, DType::Float32);
  expect_error([&] { cat({}, 0); }, {"cat", "non-empty"});
  expect_error([&] { cat({x, scalar_tensor(1.0)}, 0); }, {"cat", "zero-dimensional", "1"});
  expect_error(
      [&] {
        cat({x, filled({3}, DType::Float32)}, 0);
      },
      {"cat", "tensor 1", "[2, 3]", "[3]"});
  expect_error(
      [&] {
        cat({x, x, filled({2, 4}, DType::Float32)}, 0);
      },
      {"cat", "tensor 2", "[2, 3]", "[2, 4]"});
  expect_error([&] { cat({x, x}, 2); }, {"cat", "dim 2"});
  expect_error([&] { cat({x, x}, -3); }, {"cat", "dim -3"});
  expect_error([&] { cat({x, Tensor()}, 0); }, {"cat", "undefined"});
}

TEST(ShapeStack, EveryDim) {
  for (DType dt : kAllDTypes)
    for (Layout l : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3}) {
        SCOPED_TRACE(fmt::format("{} {} dim {}", dt, layout_name(l), dim));
        std::vector<Tensor> xs = {make({3, 4}, dt, l, 1), make({3, 4}, dt, Layout::Contiguous, 2),
                                  make({3, 4}, dt, l, 3)};
        Tensor out = kiln::testing::run_in_all_modes("stack", [&] { return stack(xs, dim); });
        int64_t d = dim < 0 ? dim + 3 : dim;
        Shape want = {3, 4};
        want.insert(want.begin() + d, 3);
        ASSERT_EQ(out.sizes(), want);
        for (const auto& idx : all_indices(want)) {
          auto src = idx;
          src.erase(src.begin() + d);
          ASSERT_EQ(at(out, idx), at(xs[idx[d]], src));
        }
      }
}

TEST(ShapeStack, ScalarsZeroSizeAndErrors) {
  Tensor s = stack({scalar_tensor(1.5), scalar_tensor(2.5)}, 0);
  EXPECT_EQ(s.sizes(), (Shape{2}));
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(stack({empty({0}), empty({0})}, 1).sizes(), (Shape{0, 2}));
  Tensor x = filled({2, 3}, DType::Float32);
  expect_error([&] { stack({}, 0); }, {"stack", "non-empty"});
  expect_error(
      [&] {
        stack({x, filled({3, 2}, DType::Float32)}, 0);
      },
      {"stack", "[2, 3]", "[3, 2]", "entry 1"});
  expect_error([&] { stack({x, x}, 3); }, {"stack", "dim 3"});
  expect_error([&] { stack({x, x}, -4); }, {"stack", "dim -4"});
}

TEST(ShapeSplit, PiecesAreAliasingViews) {
  for (DType dt : kAllDTypes)
    for (Layout l : kAllLayouts)
      for (int64_t dim : {0, 1, -1}) {
        SCOPED_TRACE(fmt::format("{} {} dim {}", dt, layout_name(l), dim));
        Tensor x = make({7, 5}, dt, l, 1);
        int64_t d = dim < 0 ? dim + 2 : dim;
        std::vector<Tensor> parts = split(x, 3, dim);
        for (size_t i = 0; i < parts.size(); ++i)
          kiln::testing::run_in_all_modes("split", [&] { return split(x, 3, dim).at(i).clone(); });
        int64_t n = x.size(d);
        ASSERT_EQ(int64_t(parts.size()), (n + 2) / 3);
        int64_t start = 0;
        for (const Tensor& p : parts) {
          EXPECT_TRUE(p.is_same_storage(x));
          ASSERT_EQ(p.size(d), std::min<int64_t>(3, n - start));
          ASSERT_EQ(p.size(1 - d), x.size(1 - d));
          for (const auto& idx : all_indices(p.sizes())) {
            auto src = idx;
            src[d] += start;
            ASSERT_EQ(at(p, idx), at(x, src));
          }
          start += p.size(d);
        }
        EXPECT_EQ(start, n);
      }
  // Writing through a piece changes the base.
  Tensor base = zeros({6, 2});
  std::vector<Tensor> parts = base.split(4, 0);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].sizes(), (Shape{2, 2}));
  parts[1].fill_(7.0);
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7}));
}

TEST(ShapeSplit, EdgeCasesAndErrors) {
  Tensor x = filled({4, 3}, DType::Float32);
  // A size beyond the dim gives one piece (PyTorch).
  auto one = split(x, 10, 0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].sizes(), (Shape{4, 3}));
  // A zero-length dim: one empty piece, for size 0 too.
  Tensor e = empty({0, 3});
  ASSERT_EQ(split(e, 2, 0).size(), 1u);
  EXPECT_EQ(split(e, 2, 0)[0].sizes(), (Shape{0, 3}));
  ASSERT_EQ(split(e, 0, 0).size(), 1u);
  EXPECT_EQ(split(x, 1, 1).size(), 3u);
  expect_error([&] { split(x, 0, 0); }, {"split", "0"});
  expect_error([&] { split(x, -1, 0); }, {"split", "-1"});
  expect_error([&] { split(x, 2, 2); }, {"split", "dim 2"});
  expect_error([&] { split(scalar_tensor(1.0), 1, 0); }, {"split", "1-dimensional"});
}

TEST(ShapeChunk, TorchRule) {
  struct Case {
    int64_t n, chunks;
    std::vector<int64_t> sizes;
  };
  // ceil(n / chunks)-sized pieces; may give fewer than `chunks` (5 in 4 chunks: 2, 2, 1).
  const Case cases[] = {{5, 4, {2, 2, 1}}, {6, 4, {2, 2, 2}}, {6, 3, {2, 2, 2}},
                        {7, 1, {7}},       {2, 5, {1, 1}},    {0, 3, {0, 0, 0}}};
  for (const Case& c : cases)
    for (Layout l : kAllLayouts) {
      SCOPED_TRACE(fmt::format("n {} chunks {} {}", c.n, c.chunks, layout_name(l)));
      Tensor x = make({3, c.n}, DType::Int64, l, 2);
      std::vector<Tensor> parts = x.chunk(c.chunks, -1);
      for (size_t i = 0; i < parts.size(); ++i)
        kiln::testing::run_in_all_modes("chunk",
                                        [&] { return x.chunk(c.chunks, -1).at(i).clone(); });
      ASSERT_EQ(parts.size(), c.sizes.size());
      int64_t start = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        ASSERT_EQ(parts[i].sizes(), (Shape{3, c.sizes[i]}));
        EXPECT_TRUE(parts[i].is_same_storage(x));
        for (const auto& idx : all_indices(parts[i].sizes()))
          ASSERT_EQ(at(parts[i], idx), at(x, {idx[0], idx[1] + start}));
        start += c.sizes[i];
      }
    }
  Tensor base = zeros({2, 4}, DType::Int32);
  chunk(base, 2, 1)[1].fill_(3);
  EXPECT_EQ(base.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 3, 3, 0, 0, 3, 3}));
}

TEST(ShapeChunk, Errors) {
  Tensor x = filled({4, 3}, DType::Float32);
  expect_error([&] { chunk(x, 0, 0); }, {"chunk", "0"});
  expect_error([&] { chunk(x, -2, 0); }, {"chunk", "-2"});
  expect_error([&] { chunk(x, 2, -3); }, {"chunk", "dim -3"});
  expect_error([&] { chunk(scalar_tensor(1.0), 1, 0); }, {"chunk", "1-dimensional"});
}
