// PyTorch type promotion (torch.result_type), exhaustively over the five dtypes. The expected
// tables are written out by hand from PyTorch's documented rules:
//  * operands have a priority: tensors with dims > 0-dim tensors > Python/C++ scalars;
//  * within one priority, dtypes promote along Bool < Int32 < Int64 < Float32 < Float64;
//  * a lower-priority operand only matters when its category (bool < integer < floating) is
//    higher than the higher-priority result's; then the two are promoted, a float scalar
//    counting as Float32 (the default dtype), an int scalar as Int64, a bool scalar as Bool.
#include "core_test_util.h"
#include "ops/meta_helpers.h"

using namespace kiln;
using namespace kiln::testutil;

namespace {

constexpr DType B = kBool, I = kInt32, L = kInt64, F = kFloat32, D = kFloat64;

// [a][b] for two tensors of the same priority (both with dims, or both 0-dim).
const DType kSame[5][5] = {
    /* Bool    */ {B, I, L, F, D},
    /* Int32   */ {I, I, L, F, D},
    /* Int64   */ {L, L, L, F, D},
    /* Float32 */ {F, F, F, F, D},
    /* Float64 */ {D, D, D, D, D},
};
// [dim tensor][0-dim tensor].
const DType kDimZero[5][5] = {
    /* Bool    */ {B, I, L, F, D},
    /* Int32   */ {I, I, I, F, D},
    /* Int64   */ {L, L, L, F, D},
    /* Float32 */ {F, F, F, F, F},
    /* Float64 */ {D, D, D, D, D},
};
// [tensor (dims or 0-dim)][scalar kind: bool, int, float].
const DType kScalar[5][3] = {
    /* Bool    */ {B, L, F},
    /* Int32   */ {I, I, F},
    /* Int64   */ {L, L, F},
    /* Float32 */ {F, F, F},
    /* Float64 */ {D, D, D},
};

Tensor tensor_of(DType d, bool zero_dim) {
  return zero_dim ? make({1}, {}, d) : make({1, 0, 1}, {3}, d);
}

}  // namespace

TEST(Promotion, TensorTensorSamePriority) {
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b)
      for (bool zero : {false, true}) {
        DType da = DType(a), db = DType(b);
        Tensor x = tensor_of(da, zero), y = tensor_of(db, zero);
        EXPECT_EQ(dname((x + y).dtype()), dname(kSame[a][b])) << dname(da) << "+" << dname(db);
        EXPECT_EQ(dname(maximum(x, y).dtype()), dname(kSame[a][b]));
        EXPECT_EQ(dname(where(make({1}, {}, kBool), x, y).dtype()), dname(kSame[a][b]));
        // Comparisons give Bool; true division gives the promoted float dtype.
        EXPECT_EQ((x < y).dtype(), kBool);
        DType p = kSame[a][b];
        EXPECT_EQ(dname((x / y).dtype()), dname(is_floating(p) ? p : kFloat32));
      }
}

TEST(Promotion, DimTensorWithZeroDimTensor) {
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b) {
      DType da = DType(a), db = DType(b);
      Tensor x = tensor_of(da, false), z = tensor_of(db, true);
      EXPECT_EQ(dname((x + z).dtype()), dname(kDimZero[a][b])) << dname(da) << "+0d " << dname(db);
      EXPECT_EQ(dname((z * x).dtype()), dname(kDimZero[a][b]))
          << "0d " << dname(db) << "*" << dname(da);
      EXPECT_EQ((x + z).sizes(), (Shape{3}));
    }
  // The value is computed in the promoted dtype: Int32 [1] + 0-dim Float64 0.1 -> 1.1 in double.
  Tensor r = make({1}, {1}, kInt32) + make({0.1}, {}, kFloat64);
  EXPECT_EQ(r.dtype(), kFloat64);
  EXPECT_EQ(values(r)[0], 1.0 + 0.1);
  Tensor f = make({1}, {1}, kFloat32) + make({0.1}, {}, kFloat64);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(values(f)[0], static_cast<double>(1.0f + static_cast<float>(0.1)));
}

TEST(Promotion, TensorWithScalar) {
  const Scalar scalars[3] = {Scalar(true), Scalar(2), Scalar(2.0)};
  for (int a = 0; a < 5; ++a)
    for (int s = 0; s < 3; ++s)
      for (bool zero : {false, true}) {
        DType da = DType(a);
        Tensor x = tensor_of(da, zero);
        std::string ctx = dname(da) + (zero ? " 0-dim" : "") + " scalar " + std::to_string(s);
        EXPECT_EQ(dname((x + scalars[s]).dtype()), dname(kScalar[a][s])) << ctx;
        EXPECT_EQ(dname((scalars[s] * x).dtype()), dname(kScalar[a][s])) << ctx;
        EXPECT_EQ((x == scalars[s]).dtype(), kBool);
      }
  // The examples of the brief.
  Tensor i32 = make({1, 2}, {2}, kInt32), i64 = make({3, 4}, {2}, kInt64);
  EXPECT_EQ((i32 + 2).dtype(), kInt32);
  EXPECT_EQ((i32 + 2.0).dtype(), kFloat32);
  Tensor b = make({1, 0}, {2}, kBool);
  EXPECT_EQ((b + true).dtype(), kBool);
  EXPECT_EQ(values(b + true), (std::vector<double>{1, 1}));
  EXPECT_EQ((i64 / i64).dtype(), kFloat32);
  EXPECT_EQ(values(i64 / make({2, 8}, {2}, kInt64)), (std::vector<double>{1.5, 0.5}));
  // A large int scalar does not widen an Int32 tensor (it wraps like PyTorch's cast).
  EXPECT_EQ((i32 * int64_t(3)).dtype(), kInt32);
}

TEST(Promotion, ThreeLevels) {
  // dim Int32 + 0-dim Int64 + float scalar: the scalar's category wins, promoted with Int32.
  ResultType rt;
  rt.add(make({1}, {1}, kInt32));
  rt.add(make({1}, {}, kInt64));
  rt.add(Scalar(1.5));
  EXPECT_EQ(rt.get(), kFloat32);
  ResultType r2;
  r2.add(make({1}, {1}, kInt32));
  r2.add(make({1}, {}, kFloat64));
  r2.add(Scalar(1.5));
  EXPECT_EQ(r2.get(), kFloat64);
  ResultType r3;  // only scalars of lower priority than a 0-dim Bool
  r3.add(make({1}, {}, kBool));
  r3.add(Scalar(3));
  EXPECT_EQ(r3.get(), kInt64);
}

TEST(Promotion, UnaryFloatOpsOnIntegers) {
  for (DType d : {kBool, kInt32, kInt64}) {
    Tensor x = make({1, 0, 1}, {3}, d);
    EXPECT_EQ(exp(x).dtype(), kFloat32) << dname(d);
    EXPECT_EQ(sigmoid(x).dtype(), kFloat32) << dname(d);
    EXPECT_EQ(x.pow(0.5).dtype(), kFloat32) << dname(d);
    EXPECT_EQ(isnan(x).dtype(), kBool);
    EXPECT_EQ(logical_not(x).dtype(), kBool);
  }
  EXPECT_EQ(make({1}, {1}, kInt32).pow(2).dtype(), kInt32);
  EXPECT_EQ(make({1}, {1}, kBool).pow(2).dtype(), kInt64);
  EXPECT_EQ(make({1}, {1}, kInt32).square().dtype(), kInt32);
  EXPECT_EQ(make({1}, {1}, kInt32).clamp(0, 5).dtype(), kInt32);
  EXPECT_EQ(make({1}, {1}, kInt32).clamp(0.5, 5).dtype(), kFloat32);
  EXPECT_EQ(make({1}, {1}, kFloat64).clamp(0.5, 5).dtype(), kFloat64);
}

TEST(Promotion, AddSubAlpha) {
  // alpha scales b in the result's dtype: Float64 + Float32 * 0.1 is computed in double.
  Tensor a = make({1}, {1}, kFloat64), b = make({0.3}, {1}, kFloat32);
  EXPECT_EQ(values(add(a, b, 0.1))[0], 1.0 + 0.1 * static_cast<double>(0.3f));
  EXPECT_EQ(values(sub(a, b, 0.1))[0], 1.0 - 0.1 * static_cast<double>(0.3f));
  // Integral inputs keep an integral alpha and reject a floating one (PyTorch's alpha_check).
  Tensor i = make({5}, {1}, kInt32);
  EXPECT_EQ(add(i, i, 3).dtype(), kInt32);
  EXPECT_EQ(values(sub(i, i, 3))[0], -10);
  expect_error([&] { add(i, i, 0.5); }, {"add", "alpha", "Int32"});
  expect_error([&] { i.sub_(i, 1.5); }, {"sub_", "alpha"});
  expect_error([&] { add(i, i, true); }, {"add", "Bool alpha"});
  // Bool + Bool with an integral alpha stays Bool (alpha * b is cast back to Bool).
  Tensor t = make({1, 0}, {2}, kBool);
  EXPECT_EQ(add(t, t, 2).dtype(), kBool);
  EXPECT_EQ(values(add(make({0, 0}, {2}, kBool), t, 2)), (std::vector<double>{1, 0}));
}
