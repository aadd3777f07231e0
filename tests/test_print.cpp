// Tensor printing (ops/print.cpp): PyTorch's layout with kiln's dtype names.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "kiln/kiln.h"

using namespace kiln;

TEST(Print, FloatMatrix) {
  Tensor t = from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(t.str(), "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]])");
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), t.str());
  // A transposed view prints its logical layout.
  EXPECT_EQ(t.t().str(), "tensor([[1.0000, 3.0000],\n        [2.0000, 4.0000]])");
}

TEST(Print, ZeroDimAndDtypes) {
  EXPECT_EQ(scalar_tensor(3.5).str(), "tensor(3.5000)");
  EXPECT_EQ(scalar_tensor(7, kInt64).str(), "tensor(7)");
  EXPECT_EQ(from_vector<int64_t>({1, -20, 300}, {3}).str(), "tensor([  1, -20, 300])");
  EXPECT_EQ(from_vector<int32_t>({5, 6}, {2}).str(), "tensor([5, 6], dtype=Int32)");
  EXPECT_EQ(from_vector<double>({1.5, -2}, {2}).str(), "tensor([ 1.5000, -2.0000], dtype=Float64)");
  EXPECT_EQ(from_vector<bool>({true, false}, {2}).str(), "tensor([ True, False])");
  EXPECT_EQ(Tensor().str(), "tensor(undefined)");
}

TEST(Print, Empty) {
  EXPECT_EQ(zeros({0}).str(), "tensor([])");
  EXPECT_EQ(zeros({2, 0}).str(), "tensor([], size=(2, 0))");
  EXPECT_EQ(zeros({0}, kInt32).str(), "tensor([], dtype=Int32)");
  EXPECT_EQ(zeros({0, 3}, kFloat64).str(), "tensor([], size=(0, 3), dtype=Float64)");
}

TEST(Print, NanInfAndScientific) {
  EXPECT_EQ(from_vector<float>({1.5f, NAN, INFINITY, -INFINITY}, {4}).str(),
            "tensor([1.5000,    nan,    inf,   -inf])");
  // Wide range, huge or tiny magnitudes switch to scientific notation, as torch does.
  EXPECT_EQ(from_vector<float>({1e-5f, 1.0f}, {2}).str(), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(from_vector<double>({2e9, 3e9}, {2}).str(),
            "tensor([2.0000e+09, 3.0000e+09], dtype=Float64)");
  EXPECT_EQ(from_vector<float>({0, 0}, {2}).str(), "tensor([0.0000, 0.0000])");
}

TEST(Print, ThreeDims) {
  EXPECT_EQ(arange(8).view({2, 2, 2}).str(),
            "tensor([[[0, 1],\n"
            "         [2, 3]],\n"
            "\n"
            "        [[4, 5],\n"
            "         [6, 7]]])");
}

TEST(Print, Summarized) {
  // Over 1000 elements: 3 edge items per dim; widths come from the shown elements only.
  EXPECT_EQ(arange(2000).str(), "tensor([   0,    1,    2, ..., 1997, 1998, 1999])");
  std::string s = arange(2000).view({40, 50}).str();
  EXPECT_EQ(s,
            "tensor([[   0,    1,    2, ...,   47,   48,   49],\n"
            "        [  50,   51,   52, ...,   97,   98,   99],\n"
            "        [ 100,  101,  102, ...,  147,  148,  149],\n"
            "        ...,\n"
            "        [1850, 1851, 1852, ..., 1897, 1898, 1899],\n"
            "        [1900, 1901, 1902, ..., 1947, 1948, 1949],\n"
            "        [1950, 1951, 1952, ..., 1997, 1998, 1999]])");
  // Exactly 1000 elements are printed in full.
  std::string full = arange(1000).str();
  EXPECT_EQ(full.find("..."), std::string::npos);
  EXPECT_NE(full.find(" 999])"), std::string::npos);
}

TEST(Print, LongRowsWrap) {
  std::string s = arange(30.0).str();
  std::istringstream in(s);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_LE(line.size(), 80u) << line;
    ++lines;
  }
  EXPECT_GT(lines, 1);
  EXPECT_EQ(s.substr(0, 24), "tensor([ 0.0000,  1.0000");
  EXPECT_NE(s.find("29.0000])"), std::string::npos);
}
