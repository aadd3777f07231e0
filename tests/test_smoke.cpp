#include <gtest/gtest.h>

#include "kiln/kiln.h"

using namespace kiln;

TEST(Smoke, AddBroadcast) {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector<float>({10, 20, 30}, {3});
  Tensor c = a + b;
  EXPECT_EQ(c.sizes(), (Shape{2, 3}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  Tensor d = a.t() * 2;
  EXPECT_EQ(d.sizes(), (Shape{3, 2}));
  EXPECT_EQ(d.contiguous().to_vector<float>(), (std::vector<float>{2, 8, 4, 10, 6, 12}));
}
