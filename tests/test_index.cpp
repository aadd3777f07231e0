// index_select, gather, scatter_add, one_hot, tril, triu against scalar references on every
// dtype and layout. Data values are small integers (exact in every dtype), and scatter_add's
// reference adds in the same sequential order the op promises, so every comparison is exact.
#include <gtest/gtest.h>

#include "layout_util.h"
#include "op_matrix.h"

using namespace kiln;
using namespace kt;

namespace {

// An index tensor of `shape` with values cycling through [0, bound), in a layout; an expanded
// one repeats its first row (a stride-0 dim).
Tensor index_in(const Shape& shape, int64_t bound, Layout l, DType dt = DType::Int64,
                int seed = 0) {
  if (l == Layout::Expanded && !shape.empty() && shape[0] > 0) {
    Shape row = shape;
    row[0] = 1;
    return index_in(row, bound, Layout::Contiguous, dt, seed).expand(shape);
  }
  if (l == Layout::Expanded) l = Layout::Contiguous;
  Tensor base = make(shape, DType::Int64, l, seed);
  // Overwrite the layout's storage through its own strides with the cycling values.
  int64_t i = 0;
  for (const auto& idx : all_indices(shape)) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * base.stride(int64_t(d));
    const_cast<int64_t*>(base.data_ptr<int64_t>())[off] = (i++ * 7 + seed * 3) % bound;
  }
  return base.to(dt);
}

}  // namespace

TEST(IndexSelect, EveryDTypeLayoutAndDim) {
  const Shape shape = {4, 5, 3};
  for (DType dt : kAllDTypes)
    for (Layout l : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1})
        for (DType it : {DType::Int64, DType::Int32}) {
          SCOPED_TRACE(fmt::format("{} {} dim {} index {}", dt, layout_name(l), dim, it));
          int64_t d = dim < 0 ? dim + 3 : dim;
          Tensor x = make(shape, dt, l, 1);
          // A strided index with repeats (6 values from [0, size)).
          Tensor index = index_in({6}, shape[d], Layout::Sliced, it, 2);
          Tensor out = kiln::testing::run_in_all_modes("index_select",
                                                       [&] { return index_select(x, dim, index); });
          Shape want = shape;
          want[d] = 6;
          ASSERT_EQ(out.sizes(), want);
          ASSERT_EQ(out.dtype(), dt);
          for (const auto& idx : all_indices(want)) {
            auto src = idx;
            src[d] = int64_t(at(index, {idx[d]}));
            ASSERT_EQ(at(out, idx), at(x, src));
          }
        }
}

TEST(IndexSelect, LargeZeroSizeAndScalar) {
  // Embedding-like: rows of a large table, parallel.
  Tensor table = filled({1000, 64}, DType::Float32, 3);
  Tensor index = index_in({2000}, 1000, Layout::Contiguous, DType::Int64, 1);
  Tensor out = table.index_select(0, index);
  ASSERT_EQ(out.sizes(), (Shape{2000, 64}));
  for (int64_t i = 0; i < 2000; i += 7)
    for (int64_t j = 0; j < 64; ++j)
      ASSERT_EQ(at(out, {i, j}), at(table, {int64_t(at(index, {i})), j}));
  // Empty index, empty input dims, and a 0-dim input / index.
  EXPECT_EQ(index_select(table, 1, empty({0}, DType::Int64)).sizes(), (Shape{1000, 0}));
  EXPECT_EQ(index_select(empty({0, 3}), 1, index_in({2}, 3, Layout::Contiguous)).sizes(),
            (Shape{0, 2}));
  Tensor s = index_select(scalar_tensor(4.0), 0, zeros({1}, DType::Int64));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 4.0);
  Tensor v = filled({5}, DType::Int32, 1);
  Tensor p = index_select(v, 0, full({}, 3, DType::Int64));
  EXPECT_EQ(p.sizes(), (Shape{1}));
  EXPECT_EQ(at(p, {0}), at(v, {3}));
}

TEST(IndexSelect, Errors) {
  Tensor x = filled({3, 4}, DType::Float32);
  auto idx = [](std::vector<int64_t> v) { return from_vector<int64_t>(v, {int64_t(v.size())}); };
  expect_error(
      [&] {
        index_select(x, 0, idx({0, 3}));
      },
      {"index_select", "index 3", "dim 0", "[0, 3)"});
  expect_error([&] { index_select(x, 1, idx({-1})); }, {"index_select", "index -1", "[0, 4)"});
  expect_error([&] { index_select(x, 0, idx({0}).to(DType::Float32)); },
               {"index_select", "Int64", "Float32"});
  expect_error(
      [&] {
        index_select(x, 0, zeros({1, 1}, DType::Int64));
      },
      {"index_select", "[1, 1]"});
  expect_error([&] { index_select(x, 2, idx({0})); }, {"index_select", "dim 2"});
  expect_error(
      [&] {
        index_select(scalar_tensor(1.0), 0, idx({0, 0}));
      },
      {"index_select", "0-dim"});
}

TEST(Gather, EveryDTypeLayoutAndDim) {
  const Shape xshape = {4, 5, 3};
  for (DType dt : kAllDTypes)
    for (Layout l : kAllLayouts)
      for (Layout il : {Layout::Contiguous, Layout::Transposed, Layout::Expanded})
        for (int64_t dim : {0, 1, -1}) {
          SCOPED_TRACE(
              fmt::format("{} {} index {} dim {}", dt, layout_name(l), layout_name(il), dim));
          int64_t d = dim < 0 ? dim + 3 : dim;
          Tensor x = make(xshape, dt, l, 1);
          // Smaller than x in the other dims, larger along dim.
          Shape ishape = {3, 4, 2};
          ishape[d] = 7;
          DType it = d == 1 ? DType::Int32 : DType::Int64;
          Tensor index = index_in(ishape, xshape[d], il, it, 2);
          Tensor out =
              kiln::testing::run_in_all_modes("gather", [&] { return x.gather(dim, index); });
          ASSERT_EQ(out.sizes(), ishape);
          ASSERT_EQ(out.dtype(), dt);
          for (const auto& idx : all_indices(ishape)) {
            auto src = idx;
            src[d] = int64_t(at(index, idx));
            ASSERT_EQ(at(out, idx), at(x, src));
          }
        }
}

TEST(Gather, LargeZeroSizeAndScalar) {
  Tensor x = filled({300, 200}, DType::Float64, 1);
  Tensor index = index_in({300, 150}, 200, Layout::Contiguous, DType::Int64, 3);
  Tensor out = gather(x, 1, index);
  for (const auto& idx : all_indices({300, 150}))
    ASSERT_EQ(at(out, idx), at(x, {idx[0], int64_t(at(index, idx))}));
  // An index expanded along the innermost dim: one index value per run.
  Tensor rowwise = index_in({300, 1}, 200, Layout::Contiguous, DType::Int64, 4).expand({300, 150});
  Tensor out2 = gather(x, 1, rowwise);
  for (const auto& idx : all_indices({300, 150}))
    ASSERT_EQ(at(out2, idx), at(x, {idx[0], int64_t(at(rowwise, idx))}));
  EXPECT_EQ(gather(x, 0, empty({0, 5}, DType::Int64)).sizes(), (Shape{0, 5}));
  Tensor s = gather(scalar_tensor(2.5), 0, zeros({}, DType::Int64));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 2.5);
}

TEST(Gather, Errors) {
  Tensor x = filled({3, 4}, DType::Float32);
  Tensor bad = from_vector<int64_t>({0, 1, 5, 0}, {2, 2});
  expect_error([&] { gather(x, 1, bad); }, {"gather", "index 5", "[0, 4)"});
  expect_error([&] { gather(x, 0, bad * -1); }, {"gather", "index -1", "[0, 3)"});
  expect_error(
      [&] {
        gather(x, 0, zeros({2, 2}, DType::Float32));
      },
      {"gather", "Int64 or Int32", "Float32"});
  // An empty index reads nothing: PyTorch skips the dtype and shape checks.
  EXPECT_EQ(gather(x, 0, empty({0, 9}, DType::Float32)).sizes(), (Shape{0, 9}));
  expect_error([&] { gather(x, 0, zeros({2}, DType::Int64)); }, {"gather", "same number of dims"});
  expect_error([&] { gather(x, 0, zeros({2, 5}, DType::Int64)); }, {"gather", "[2, 5]", "[3, 4]"});
  expect_error([&] { gather(x, -3, zeros({2, 2}, DType::Int64)); }, {"gather", "dim -3"});
}

namespace {

// Sequential reference: out = x, then out[...index...] += src[...] in row-major index order.
std::vector<double> scatter_add_ref(const Tensor& x, int64_t d, const Tensor& index,
                                    const Tensor& src) {
  Shape xs = x.sizes();
  std::vector<double> out;
  for (const auto& idx : all_indices(xs)) out.push_back(at(x, idx));
  std::vector<int64_t> strides(xs.size(), 1);
  for (int64_t k = int64_t(xs.size()) - 2; k >= 0; --k) strides[k] = strides[k + 1] * xs[k + 1];
  bool is_bool = x.dtype() == DType::Bool;
  bool is_f32 = x.dtype() == DType::Float32;
  for (const auto& idx : all_indices(index.sizes())) {
    auto dst = idx;
    dst[d] = int64_t(at(index, idx));
    int64_t off = 0;
    for (size_t k = 0; k < dst.size(); ++k) off += dst[k] * strides[k];
    double v = out[off] + at(src, idx);
    if (is_bool) v = v != 0;
    if (is_f32) v = float(v);
    out[off] = v;
  }
  return out;
}

void expect_values(const Tensor& out, const std::vector<double>& want) {
  auto idx = all_indices(out.sizes());
  ASSERT_EQ(idx.size(), want.size());
  for (size_t i = 0; i < idx.size(); ++i) ASSERT_EQ(at(out, idx[i]), want[i]) << "element " << i;
}

}  // namespace

TEST(ScatterAdd, EveryDTypeLayoutAndDim) {
  const Shape xshape = {4, 5, 3};
  for (DType dt : kAllDTypes)
    for (Layout l : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -2}) {
        SCOPED_TRACE(fmt::format("{} {} dim {}", dt, layout_name(l), dim));
        int64_t d = dim < 0 ? dim + 3 : dim;
        Tensor x = make(xshape, dt, l, 1);
        Shape ishape = {3, 4, 2};
        ishape[d] = 6;  // more index entries than positions: duplicates accumulate
        Shape sshape = {4, 4, 3};
        sshape[d] = 7;  // src larger than index everywhere
        Tensor index = index_in(ishape, xshape[d], l == Layout::Expanded ? l : Layout::Transposed,
                                d == 1 ? DType::Int32 : DType::Int64, 2);
        Tensor src = make(sshape, dt, l, 3);
        Tensor out = kiln::testing::run_in_all_modes(
            "scatter_add", [&] { return scatter_add(x, dim, index, src); });
        ASSERT_EQ(out.sizes(), xshape);
        ASSERT_EQ(out.dtype(), dt);
        expect_values(out, scatter_add_ref(x, d, index, src));
        // Out of place: x is unchanged.
        Tensor again = make(xshape, dt, l, 1);
        for (const auto& idx : all_indices(xshape)) ASSERT_EQ(at(x, idx), at(again, idx));
      }
}

TEST(ScatterAdd, LargeIsDeterministicAndParallel) {
  // Float32 sums of values with many collisions: the result must match the sequential order
  // exactly, through both work splits (long inner rows, and many outer blocks).
  struct Case {
    Shape x, index;
    int64_t dim;
  };
  const Case cases[] = {{{8, 20000}, {40, 20000}, 0}, {{400, 50}, {400, 300}, 1}};
  for (const Case& c : cases) {
    Tensor x = filled(c.x, DType::Float32, 1) * 0.37;
    Tensor src = filled(c.index, DType::Float32, 2) * 1.13;
    Tensor index = index_in(c.index, c.x[c.dim], Layout::Contiguous, DType::Int64, 5);
    Tensor out = scatter_add(x, c.dim, index, src);
    expect_values(out, scatter_add_ref(x, c.dim, index, src));
  }
}

TEST(ScatterAdd, ZeroSizeAndErrors) {
  Tensor x = filled({3, 4}, DType::Float32, 1);
  Tensor e = scatter_add(x, 0, empty({0, 4}, DType::Int64), empty({0, 4}));
  expect_values(e, scatter_add_ref(x, 0, empty({0, 4}, DType::Int64), empty({0, 4})));
  Tensor bad = from_vector<int64_t>({0, 3}, {1, 2});
  Tensor src = ones({2, 4});
  expect_error([&] { scatter_add(x, 0, bad, src); }, {"scatter_add", "index 3", "[0, 3)"});
  expect_error([&] { scatter_add(x, 1, bad * -2, src); }, {"scatter_add", "index -6", "[0, 4)"});
  expect_error([&] { scatter_add(x, 0, bad.to(DType::Float64), src); },
               {"scatter_add", "Int64 or Int32", "Float64"});
  expect_error([&] { scatter_add(x, 0, bad, src.to(DType::Float64)); },
               {"scatter_add", "Float64", "Float32"});
  expect_error([&] { scatter_add(x, 0, zeros({2}, DType::Int64), src); },
               {"scatter_add", "same number of dims"});
  expect_error(
      [&] {
        scatter_add(x, 0, zeros({2, 5}, DType::Int64), ones({2, 5}));
      },
      {"scatter_add", "[2, 5]", "[3, 4]"});
  expect_error(
      [&] {
        scatter_add(x, 0, zeros({3, 2}, DType::Int64), ones({2, 2}));
      },
      {"scatter_add", "source", "[2, 2]"});
  expect_error([&] { scatter_add(x, 2, bad, src); }, {"scatter_add", "dim 2"});
}

TEST(OneHot, ValuesShapesAndInference) {
  for (Layout l : kAllLayouts) {
    SCOPED_TRACE(layout_name(l));
    Tensor index = index_in({3, 4}, 5, l, DType::Int64, 1);
    for (int64_t classes : {5, 7, -1}) {
      Tensor out =
          kiln::testing::run_in_all_modes("one_hot", [&] { return one_hot(index, classes); });
      int64_t c = classes;
      if (c == -1) {
        c = 0;
        for (const auto& idx : all_indices({3, 4})) c = std::max<int64_t>(c, at(index, idx) + 1);
      }
      ASSERT_EQ(out.sizes(), (Shape{3, 4, c}));
      ASSERT_EQ(out.dtype(), DType::Int64);
      for (const auto& idx : all_indices(out.sizes()))
        ASSERT_EQ(at(out, idx), at(index, {idx[0], idx[1]}) == double(idx[2]) ? 1.0 : 0.0);
    }
  }
  Tensor big = index_in({50000}, 10, Layout::Contiguous);
  Tensor ob = one_hot(big, 10);
  for (int64_t i = 0; i < 50000; i += 97)
    for (int64_t j = 0; j < 10; ++j)
      ASSERT_EQ(at(ob, {i, j}), at(big, {i}) == double(j) ? 1.0 : 0.0);
  Tensor s = one_hot(full({}, 2, DType::Int64), 4);
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0}));
  EXPECT_EQ(one_hot(empty({0, 2}, DType::Int64), 3).sizes(), (Shape{0, 2, 3}));
}

TEST(OneHot, Errors) {
  Tensor idx = from_vector<int64_t>({0, 4, 1}, {3});
  expect_error([&] { one_hot(idx, 4); }, {"one_hot", "4", "[0, 4)"});
  expect_error([&] { one_hot(idx * -1, 4); }, {"one_hot", "-4"});
  expect_error([&] { one_hot(idx * -1, -1); }, {"one_hot", "non-negative", "-4"});
  expect_error([&] { one_hot(idx, 0); }, {"one_hot", "[0, 0)"});
  expect_error([&] { one_hot(idx, -2); }, {"one_hot", "-2"});
  expect_error([&] { one_hot(idx.to(DType::Int32), 5); }, {"one_hot", "Int64", "Int32"});
  expect_error([&] { one_hot(empty({0}, DType::Int64), -1); }, {"one_hot", "empty"});
}

TEST(Triangle, EveryDTypeLayoutAndDiagonal) {
  for (DType dt : kAllDTypes)
    for (Layout l : kAllLayouts)
      for (const Shape& shape : {Shape{4, 6}, Shape{2, 5, 3}, Shape{3, 1, 4, 4}})
        for (int64_t k : {-7, -2, -1, 0, 1, 3, 100}) {
          SCOPED_TRACE(fmt::format("{} {} {} k {}", dt, layout_name(l), shape_str(shape), k));
          Tensor x = make(shape, dt, l, 1);
          Tensor lo = kiln::testing::run_in_all_modes("tril", [&] { return x.tril(k); });
          Tensor up = kiln::testing::run_in_all_modes("triu", [&] { return triu(x, k); });
          ASSERT_EQ(lo.sizes(), shape);
          ASSERT_EQ(up.dtype(), dt);
          for (const auto& idx : all_indices(shape)) {
            int64_t i = idx[idx.size() - 2], j = idx.back();
            ASSERT_EQ(at(lo, idx), j - i <= k ? at(x, idx) : 0.0);
            ASSERT_EQ(at(up, idx), j - i >= k ? at(x, idx) : 0.0);
          }
        }
}

TEST(Triangle, LargeZeroSizeAndErrors) {
  Tensor x = filled({300, 400}, DType::Float32, 2);
  Tensor lo = tril(x, -5), up = triu(x.t(), 7);
  for (int64_t i = 0; i < 300; i += 13)
    for (int64_t j = 0; j < 400; ++j) {
      ASSERT_EQ(at(lo, {i, j}), j - i <= -5 ? at(x, {i, j}) : 0.0);
      ASSERT_EQ(at(up, {j, i}), i - j >= 7 ? at(x, {i, j}) : 0.0);
    }
  EXPECT_EQ(tril(empty({0, 3})).sizes(), (Shape{0, 3}));
  EXPECT_EQ(triu(empty({2, 3, 0})).sizes(), (Shape{2, 3, 0}));
  expect_error([&] { tril(filled({3}, DType::Float32)); }, {"tril", "[3]"});
  expect_error([&] { triu(scalar_tensor(1.0)); }, {"triu", "2 dims"});
}
