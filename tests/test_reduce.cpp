#include <gtest/gtest.h>
#include "ops/functions.h"
using namespace kiln;
TEST(Reduce, Smoke) {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(x.sum().item<float>(), 21.f);
  EXPECT_EQ(x.sum({1}).to_vector<float>(), (std::vector<float>{6, 15}));
}
