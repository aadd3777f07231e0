// Review findings, round 4: edges of the eager op set (scalar narrowing, broadcasting of
// masked_fill, gradients at special values, dropout's dropped elements). Each test is
// DISABLED_ until the bug it shows is fixed; run them with
//   ./kiln-tests --gtest_also_run_disabled_tests --gtest_filter='ReviewFindings4.*'
// (also with KILN_JIT=1: every one of them fails the same way recorded, since the op's meta
// function and kernel are shared by both modes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "expect_error.h"
#include "kiln/kiln.h"
#include "record_util.h"

namespace kiln::testing {
namespace {

// ---------------------------------------------------------------------------------------------
// 1. clamp of an integer tensor with a whole-number bound outside the dtype's range silently
//    wraps the bound.
//
// Symptom: clamp(Int32 [1, 2, 3], 0, 3e9) returns [-1294967296, -1294967296, -1294967296]: the
//    upper bound 3e9 is narrowed to int32 modulo 2^32, so every element is "clamped" to a large
//    negative number (it should be unchanged: all elements are already <= 3e9). Same with
//    KILN_JIT=1.
// libtorch: clamp_scalar_kernel_impl reads the bounds with Scalar::to<scalar_t>(), which is
//    c10::checked_convert: "value cannot be converted to type int32_t without overflow" (a
//    c10::Error). The result dtype stays Int32 there too (an integral scalar does not promote).
// Root cause: ops/cpu/pointwise_functors.h: ClampF::operator() calls lo.to<T>() / hi.to<T>(),
//    and runtime/scalar.h: Scalar::to<T>() is a plain static_cast (modular for int64 -> int32,
//    undefined behaviour for an out-of-range double -> integer). The value category check in
//    ops/pointwise.cpp: unary_compute (ResultType) only looks at the category, never the value.
// Suggested fix: give Scalar a checked conversion (c10's checked_convert: a finite value outside
//    [lowest, max] of T, or a NaN for an integer T, is an error) and call it from the meta
//    functions that know the compute dtype (unary_compute for Clamp; masked_fill_meta; fill_meta,
//    see finding 2), raising a kiln::Error that names the op, the value and the dtype. Doing it in
//    meta keeps the error at the call in both modes.
TEST(ReviewFindings4, DISABLED_Clamp_Int32_Bound_Out_Of_Range_Wraps) {
  Tensor x = from_vector<int32_t>({1, 2, 3}, {3});
  Tensor y;
  try {
    y = clamp(x, 0, 3e9);
    kiln::sync();
  } catch (const Error&) {
    return;  // libtorch's behaviour: an overflow error
  }
  // Not raising is acceptable only if the values are right (nothing exceeds 3e9).
  ASSERT_EQ(y.dtype(), kInt32);
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3}))
      << "clamp's upper bound 3e9 was narrowed to int32 (wrapped): " << y;
}

// ---------------------------------------------------------------------------------------------
// 2. full / fill_ / masked_fill with a value that does not fit an integer dtype store garbage
//    (undefined behaviour) instead of raising.
//
// Symptom: full({2}, 3e9, kInt32) gives [-2147483648, -2147483648] (a double -> int32 conversion
//    out of range: undefined behaviour in C++, x86's cvttsd2si "indefinite" value);
//    masked_fill(Int32 [1, 2], [true, false], NaN) gives [-2147483648, 2]; masked_fill(Int32,
//    mask, int64 3000000000) gives -1294967296. Same with KILN_JIT=1.
// libtorch: fill_kernel and masked_fill_kernel convert the value with Scalar::to<scalar_t>()
//    (c10::checked_convert), so torch::full({2}, 3e9, torch::kInt32), x.fill_(3e9) and
//    x.masked_fill(mask, NAN) on an Int32 x raise "value cannot be converted to type int32_t
//    without overflow".
// Root cause: runtime/scalar.h: Scalar::to<T>() (static_cast, unchecked), reached from the fill
//    and masked_fill inner loops (ops/cpu/pointwise_kernels.cpp via pointwise_table().fill /
//    .masked_fill); ops/copy.cpp: fill_meta and ops/pointwise.cpp: masked_fill_meta never look
//    at the value.
// Suggested fix: as in finding 1, a checked Scalar conversion called from fill_meta and
//    masked_fill_meta (the destination dtype is known there), raising a kiln::Error naming the
//    op, the value and the dtype.
TEST(ReviewFindings4, DISABLED_Full_And_MaskedFill_Value_Out_Of_Range_For_Int_Dtype) {
  expect_error([] { (void)full({2}, 3e9, kInt32); }, "full", "Int32");
  expect_error([] { zeros({2}, kInt32).fill_(3e9); }, "full", "Int32");
  Tensor x = from_vector<int32_t>({1, 2}, {2});
  Tensor mask = from_vector<bool>({true, false}, {2});
  expect_error([&] { (void)masked_fill(x, mask, NAN); }, "masked_fill", "Int32");
  expect_error([&] { (void)masked_fill(x, mask, int64_t{3000000000}); }, "masked_fill", "Int32");
}

// ---------------------------------------------------------------------------------------------
// 3. The gradient of pow(0.0, e) with respect to e is NaN / -inf instead of 0.
//
// Symptom: e = [0, 1, 2] (requires_grad), y = pow(0.0, e) = [1, 0, 0]; y.sum().backward() gives
//    e.grad() = [-inf, nan, nan]. The same program with a zero *tensor* base,
//    pow(zeros({3}), e), gives [0, 0, 0]. Same with KILN_JIT=1.
// libtorch: pow_backward_exponent(grad, Scalar base, exponent, result) special-cases
//    base == 0: where(exponent >= 0, 0, grad * result * log(base)), so the gradient is [0, 0, 0]
//    (the tensor-base overload does the same).
// Root cause: ops/pointwise_backward.cpp: pow_bw, the scalar_left branch, returns
//    c.grad * y * std::log(s) unconditionally: log(0) = -inf, and y = 0 for e > 0 makes 0 * -inf =
//    NaN. The tensor-tensor branch below it already masks a == 0 && b >= 0.
// Suggested fix: in the scalar_left branch, when s == 0 return
//    where(e >= 0, zeros_like(y), c.grad * y * log(s)) (e = in(c, 0)), as the tensor branch does.
TEST(ReviewFindings4, DISABLED_Pow_Scalar_Zero_Base_Exponent_Grad_Is_Nan) {
  Tensor e = from_vector<float>({0.0f, 1.0f, 2.0f}, {3}).requires_grad_();
  pow(0.0, e).sum().backward();
  Tensor e2 = from_vector<float>({0.0f, 1.0f, 2.0f}, {3}).requires_grad_();
  pow(zeros({3}), e2).sum().backward();
  EXPECT_EQ(e2.grad().to_vector<float>(), (std::vector<float>{0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(e.grad().to_vector<float>(), (std::vector<float>{0.0f, 0.0f, 0.0f}))
      << "d pow(0, e)/de: " << e.grad();
}

// ---------------------------------------------------------------------------------------------
// 4. Out-of-place masked_fill does not broadcast the input against the mask.
//
// Symptom: masked_fill(ones({3}), mask of shape [2, 3], 5) raises "masked_fill: the mask of
//    shape [2, 3] must broadcast to the input's shape [3]" (both modes).
// libtorch: the out-of-place at::masked_fill does expand_outplace(mask, self), clones the
//    expanded self and fills it, so the result has the broadcast shape [2, 3]
//    (torch.ones(3).masked_fill(mask_2x3, 5) works). Only the in-place masked_fill_ requires the
//    mask to broadcast to self's shape.
// Root cause: ops/pointwise.cpp: masked_fill_meta applies the in-place rule
//    (broadcast(x, mask) == x.sizes()) to the out-of-place op too, and sets m.sizes = x's sizes.
// Suggested fix: in masked_fill_meta use the broadcast shape of x and mask as the output shape;
//    keep the "must broadcast to the input's shape" check for the in-place path, which
//    dispatch_into already enforces (meta.sizes == out.sizes()). The backward
//    (ops/pointwise_backward.cpp: masked_fill_bw) then needs a sum_to(x's shape).
TEST(ReviewFindings4, DISABLED_MaskedFill_Out_Of_Place_Does_Not_Broadcast_Input) {
  Tensor x = from_vector<float>({1, 2, 3}, {3});
  Tensor mask = from_vector<bool>({true, false, true, false, false, false}, {2, 3});
  Tensor y;
  try {
    y = masked_fill(x, mask, 5.0);
    kiln::sync();
  } catch (const Error& err) {
    FAIL() << "libtorch broadcasts self with the mask here; kiln raised: " << err.what();
  }
  ASSERT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{5, 2, 5, 1, 2, 3}));
}

// ---------------------------------------------------------------------------------------------
// 5. dropout writes +0.0 for dropped elements instead of x * 0 (NaN and inf are lost, -x gives
//    +0.0); most visible with p == 1, which is deterministic.
//
// Symptom: dropout([NaN, -1, inf], 1.0, true) returns [0, 0, 0] (all +0.0). Same recorded.
// libtorch (CPU): at::dropout -> _dropout_impl: p == 1 returns input * zeros({}), and otherwise
//    input * noise with noise = bernoulli(1 - p) / (1 - p); a dropped element is x * 0, i.e.
//    NaN for NaN or +-inf, -0.0 for a negative x. So the result is [NaN, -0.0, NaN].
// Root cause: ops/dropout.cpp: dropout() returns zeros_like(x) for p == 1, and dropout_eager
//    stores T(0) for a dropped element.
// Suggested fix: p == 1: return x * 0.0 (mul keeps autograd); in dropout_eager store
//    xp[i] * T(0) for a dropped element (kept ones are already xp[i] * scale). docs/random.md's
//    rule ("else y[i] = 0") changes accordingly.
TEST(ReviewFindings4, DISABLED_Dropout_Dropped_Elements_Are_Plus_Zero_Not_X_Times_Zero) {
  Tensor x = from_vector<float>({NAN, -1.0f, INFINITY}, {3});
  std::vector<float> y = dropout(x, 1.0, true).to_vector<float>();
  ASSERT_EQ(y.size(), 3u);
  EXPECT_TRUE(std::isnan(y[0])) << "NaN * 0 is NaN in libtorch, got " << y[0];
  EXPECT_TRUE(y[1] == 0.0f && std::signbit(y[1])) << "-1 * 0 is -0.0 in libtorch, got " << y[1];
  EXPECT_TRUE(std::isnan(y[2])) << "inf * 0 is NaN in libtorch, got " << y[2];
}

}  // namespace
}  // namespace kiln::testing
