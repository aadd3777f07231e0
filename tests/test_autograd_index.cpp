// Gradient checks of the shape and indexing ops (finite differences, see gradcheck.h).
#include "gradcheck.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

TEST(AutogradIndex, CatStackSplitChunk) {
  expect_gradcheck(
      [](const std::vector<Tensor>& x) {
        return cat({x[0], x[1] * 2.0, x[2]}, 1);
      },
      {leaf({2, 3}, -1, 1, 1), transposed_leaf(2, 2), leaf({2, 1}, -1, 1, 3)});
  expect_gradcheck(
      [](const std::vector<Tensor>& x) {
        return stack({x[0], x[1]}, -1);
      },
      {leaf({3}, -1, 1, 1), leaf({3}, -1, 1, 2)});
  expect_gradcheck(
      [](const std::vector<Tensor>& x) {
        auto parts = split(x[0], 2, 1);
        auto chunks = chunk(x[0], 2, 0);
        return parts[0] * parts[2].sum() + chunks[1].sum({1}, true);
      },
      {leaf({2, 5})});
}

TEST(AutogradIndex, IndexSelectGatherScatterAdd) {
  Tensor idx = from_vector<int64_t>({2, 0, 2}, {3});
  expect_gradcheck([&](const std::vector<Tensor>& x) { return index_select(x[0], 1, idx); },
                   {leaf({2, 4})});
  expect_gradcheck([&](const std::vector<Tensor>& x) { return index_select(x[0], 0, idx); },
                   {transposed_leaf(3, 2)});
  Tensor gidx = from_vector<int64_t>({0, 1, 1, 0, 2, 2}, {2, 3});
  expect_gradcheck([&](const std::vector<Tensor>& x) { return gather(x[0], 1, gidx); },
                   {leaf({2, 3})});
  Tensor sidx = from_vector<int64_t>({1, 0, 1, 2}, {2, 2});
  expect_gradcheck(
      [&](const std::vector<Tensor>& x) { return scatter_add(x[0], 1, sidx, x[1]) * x[0]; },
      {leaf({2, 3}, -1, 1, 1), leaf({3, 3}, -1, 1, 2)});
}

TEST(AutogradIndex, TrilTriu) {
  expect_gradcheck([](const std::vector<Tensor>& x) { return tril(x[0], -1) + triu(x[0], 1); },
                   {leaf({2, 3, 4})});
}

}  // namespace
