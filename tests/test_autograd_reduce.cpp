// Gradient checks of the reductions (finite differences, see gradcheck.h).
#include "gradcheck.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

TEST(AutogradReduce, SumMeanVarStdLogsumexp) {
  for (bool keep : {false, true}) {
    expect_gradcheck([&](const std::vector<Tensor>& x) { return x[0].sum({1}, keep); },
                     {leaf({2, 3})});
    expect_gradcheck(
        [&](const std::vector<Tensor>& x) {
          return x[0].mean({0, -1}, keep);
        },
        {leaf({2, 3, 2})});
    expect_gradcheck([&](const std::vector<Tensor>& x) { return var(x[0], {0}, true, keep); },
                     {transposed_leaf(3, 4)});
    expect_gradcheck(
        [&](const std::vector<Tensor>& x) { return kiln::std(x[0], {1}, false, keep); },
        {leaf({3, 4})});
    expect_gradcheck([&](const std::vector<Tensor>& x) { return logsumexp(x[0], {1}, keep); },
                     {leaf({2, 5})});
  }
  expect_gradcheck([](const std::vector<Tensor>& x) { return x[0].sum() * x[0].mean(); },
                   {leaf({3, 2})});
}

TEST(AutogradReduce, ProdWithAndWithoutZeros) {
  expect_gradcheck([](const std::vector<Tensor>& x) { return prod(x[0], {1}); },
                   {leaf({3, 4}, 0.5, 1.5)});
  expect_gradcheck([](const std::vector<Tensor>& x) { return x[0].prod(); }, {leaf({5}, 0.5, 1.5)});
  // One zero in a row: its gradient is the product of the others; two zeros: all zero.
  Tensor x = from_vector<double>({2, 0, 3, 0, 0, 4}, {2, 3}).requires_grad_();
  prod(x, {1}).backward(ones({2}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 6, 0, 0, 0, 0}));
}

TEST(AutogradReduce, AmaxAminSplitTies) {
  Tensor x = from_vector<double>({1, 3, 3, 2, 0, 0}, {2, 3}).requires_grad_();
  amax(x, {1}).backward(ones({2}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0.5, 0.5, 1, 0, 0}));
  Tensor y = from_vector<double>({1, 3, 3, 2, 0, 0}, {2, 3}).requires_grad_();
  amin(y, {1}, true).backward(ones({2, 1}, kFloat64));
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 0.5, 0.5}));
  expect_gradcheck([](const std::vector<Tensor>& t) { return amax(t[0], {0}); }, {leaf({4, 3})});
}

}  // namespace
