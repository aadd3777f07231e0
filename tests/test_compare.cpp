// allclose and equal (ops/compare.cpp) against hand-computed expectations.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

using namespace kiln;

TEST(Allclose, Tolerances) {
  Tensor a = from_vector<double>({1.0, 2.0, 100.0}, {3});
  // |a-b| <= atol + rtol*|b|, elementwise.
  EXPECT_TRUE(allclose(a, from_vector<double>({1.0, 2.0, 100.0}, {3})));
  EXPECT_TRUE(allclose(a, from_vector<double>({1.0 + 1e-9, 2.0, 100.0005}, {3})));
  EXPECT_FALSE(allclose(a, from_vector<double>({1.0, 2.0, 100.01}, {3})));
  EXPECT_TRUE(allclose(a, from_vector<double>({1.0, 2.0, 100.01}, {3}), 1e-4));
  EXPECT_TRUE(allclose(a, from_vector<double>({1.4, 2.0, 100.0}, {3}), 0, 0.5));
  EXPECT_FALSE(allclose(a, from_vector<double>({1.6, 2.0, 100.0}, {3}), 0, 0.5));
  // Asymmetric in b: |1 - 2| <= 0.5 * |2| but not <= 0.5 * |1|.
  Tensor one = from_vector<double>({1.0}, {1}), two = from_vector<double>({2.0}, {1});
  EXPECT_TRUE(allclose(one, two, 0.5, 0));
  EXPECT_FALSE(allclose(two, one, 0.5, 0));
}

TEST(Allclose, NanInf) {
  Tensor n = from_vector<float>({NAN}, {1});
  EXPECT_FALSE(allclose(n, n));
  Tensor pinf = from_vector<float>({INFINITY}, {1}), ninf = from_vector<float>({-INFINITY}, {1});
  EXPECT_TRUE(allclose(pinf, pinf));
  EXPECT_FALSE(allclose(pinf, ninf));
  EXPECT_FALSE(allclose(pinf, from_vector<float>({1e30f}, {1}), 1.0, 1e30));
}

TEST(Allclose, BroadcastStridesAndDtypes) {
  Tensor m = from_vector<float>({1, 2, 3, 1, 2, 3}, {2, 3});
  EXPECT_TRUE(allclose(m, from_vector<float>({1, 2, 3}, {3})));
  EXPECT_TRUE(allclose(m.t(), from_vector<float>({1, 2, 3}, {3, 1})));
  EXPECT_FALSE(allclose(m.t(), from_vector<float>({1, 2}, {2})));
  EXPECT_TRUE(allclose(m, from_vector<int32_t>({1, 2, 3}, {3})));  // compared after promotion
  EXPECT_TRUE(allclose(from_vector<int64_t>({5, 7}, {2}), from_vector<int64_t>({5, 7}, {2})));
  EXPECT_FALSE(
      allclose(from_vector<int64_t>({INT64_MAX}, {1}), from_vector<int64_t>({INT64_MIN}, {1})));
  EXPECT_TRUE(allclose(from_vector<bool>({true}, {1}), from_vector<bool>({true}, {1})));
  EXPECT_TRUE(allclose(zeros({0, 3}), zeros({3})));
  Tensor big = arange(100000, kFloat32);
  EXPECT_TRUE(allclose(big, big.clone()));
  Tensor other = big.clone();
  other.mutable_data_ptr<float>()[99999] = 0;
  EXPECT_FALSE(allclose(big, other));
}

TEST(Allclose, Errors) {
  try {
    allclose(zeros({2, 3}), zeros({4}));
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("allclose"), std::string::npos) << e.what();
  }
  EXPECT_THROW(allclose(zeros({2}), zeros({2}), -1.0), Error);
  EXPECT_THROW(allclose(Tensor(), zeros({2})), Error);
}

TEST(Equal, Basics) {
  Tensor a = from_vector<int32_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(equal(a, a.clone()));
  EXPECT_TRUE(equal(a, from_vector<double>({1, 2, 3, 4}, {2, 2})));  // dtypes may differ
  EXPECT_FALSE(equal(a, from_vector<int32_t>({1, 2, 3, 5}, {2, 2})));
  EXPECT_FALSE(equal(a, from_vector<int32_t>({1, 2, 3, 4}, {4})));  // shapes must match
  EXPECT_FALSE(equal(a, from_vector<int32_t>({1, 2}, {2})));        // no broadcasting
  EXPECT_TRUE(equal(a.t(), from_vector<int32_t>({1, 3, 2, 4}, {2, 2})));
  Tensor n = from_vector<float>({NAN}, {1});
  EXPECT_FALSE(equal(n, n));
  EXPECT_TRUE(equal(zeros({0}), zeros({0}, kInt64)));
  EXPECT_TRUE(equal(from_vector<bool>({true, false}, {2}), from_vector<int64_t>({1, 0}, {2})));
  try {
    equal(Tensor(), a);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("equal"), std::string::npos);
  }
}
