// The first training example (examples/mlp_train.cpp) learns: its seeded loss falls below a
// fixed threshold within a fixed number of steps.
#include <gtest/gtest.h>

#include "spirals.h"

TEST(Training, SpiralMlpLossFalls) {
  float first = 0;
  float last = spirals::train(100, 32, 250, [&](int step, float loss) {
    if (step == 0) first = loss;
  });
  EXPECT_GT(first, 0.5f);
  EXPECT_LT(last, 0.15f);
}
