// Review round 5: bad input (undefined tensors, degenerate sizes, malformed files, config).
// Each test is a confirmed violation of the rule "bad input raises a kiln::Error naming the op,
// shapes, dtypes and what was expected; never a crash, a hang, silent garbage or UB". They are
// DISABLED_ so the suite stays green; run one with
//   ./kiln-tests --gtest_also_run_disabled_tests --gtest_filter='ReviewFindings5.<name>'
// (and again with KILN_JIT=1: every one fails the same way in both modes unless noted).
// Tests marked CRASHES die with SIGSEGV when enabled instead of failing an expectation.
#include <gtest/gtest.h>

#include <cstdint>

#include "expect_error.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using testing::expect_error;

// A shape whose element count overflows int64 to a small number: 16777232 * 1099510579201 =
// 2^64 + 16, so numel wraps to 16.
constexpr int64_t kWrapA = 16777232;
constexpr int64_t kWrapB = 1099510579201;

// ---- memory safety ----

// CRASHES (SIGSEGV, both modes). Symptom: zeros({16777232, 1099510579201}) succeeds; its numel()
// is 16 (the product wrapped past 2^64), so 16 floats are allocated while sizes/strides describe
// 2^64 + 16 elements. Reading z[5][7] reads ~5.5e12 floats past the allocation and segfaults
// (z[A-1].fill_(3) and z.t().contiguous() too). zeros({2^32, 2^32}) silently gives numel 0, and
// ones({2^32, 2^32}).sum() returns 0; ones({3, 2^62}).numel() is negative.
// Root cause: nothing checks that the product of the sizes fits int64: runtime/tensor_impl.cpp
// numel_of() and TensorImpl::TensorImpl multiply unchecked, and the factories' check_factory()
// (ops/factories.cpp), from_vector(), eye_meta (ops/ranges.cpp) and the view metas only check
// signs. Fix: one checked helper (__builtin_mul_overflow over the sizes, also over
// numel * itemsize) used by check_factory/from_vector/eye/randint/rand/randn and by every meta
// that produces new sizes (expand, view/reshape, cat, ...), raising e.g. "zeros: shape [..] has
// too many elements (the count overflows int64)".
TEST(ReviewFindings5, DISABLED_FactoryNumelOverflowReadsOutOfBounds) {
  expect_error([] { Tensor z = zeros({kWrapA, kWrapB}); (void)z[5][7].item<float>(); }, "zeros");
}

// Non-crashing form of the same bug: the factories must refuse a shape whose element count
// overflows (today each of these returns a tensor with a wrapped numel: 0, 0, 0, 16, 0).
TEST(ReviewFindings5, DISABLED_FactoryNumelOverflowNotRejected) {
  const int64_t big = int64_t(1) << 32;
  expect_error([&] { zeros({big, big}); }, "zeros");
  expect_error([&] { ones({big, big}); }, "ones");
  expect_error([&] { eye(big); }, "eye");
  expect_error([&] { rand({kWrapA, kWrapB}); }, "rand");
  expect_error([&] { from_vector<float>({}, {big, big}); }, "from_vector");
}

// CRASHES (SIGSEGV, both modes). Symptom: ones({1}).expand({16777232, 1099510579201}).sum()
// segfaults (so does zeros({3}).expand({A, B, 3}).sum()); with {2^32, 2^32} it silently returns
// 0 and numel() is 0. Root cause: ops/views.cpp expand_meta accepts any target sizes without
// checking that their product fits int64; the reduction then iterates over the wrapped count
// with the real strides. Fix: check the output numel for overflow in expand_meta (the shared
// helper above), raising "expand: target shape [...] has too many elements".
TEST(ReviewFindings5, DISABLED_ExpandNumelOverflow) {
  expect_error([] { ones({1}).expand({kWrapA, kWrapB}).sum().item<float>(); }, "expand");
}

// CRASHES (SIGSEGV, both modes; with KILN_JIT=1 only once the result is used, as here).
// Symptom: arange(0, 2^62) and linspace(0, 1, 2^62) segfault instead of raising out-of-memory.
// Root cause: runtime/dispatcher.cpp empty_tensor() computes static_cast<size_t>(n) *
// itemsize(dtype), which wraps to 0 for n = 2^62 Float32/Int64; a zero-byte storage is made and
// the kernel (arange_eager/linspace_eager) writes 2^62 elements into it. Fix: check
// n * itemsize for overflow in empty_tensor (and Storage's constructor) and raise
// "<op>: [2^62] Int64 needs more than 2^64 bytes" (or the out-of-memory error).
TEST(ReviewFindings5, DISABLED_ArangeLinspaceByteSizeOverflowSegfaults) {
  expect_error([] { arange(0, int64_t(1) << 62).sum().item<int64_t>(); }, "arange");
  expect_error([] { linspace(0, 1, int64_t(1) << 62).sum().item<float>(); }, "linspace");
}

// CRASHES (SIGSEGV, both modes). Symptom: x.expand_as(Tensor()) dereferences a null impl.
// Root cause: ops/views.cpp Tensor::expand_as calls o.impl()->sizes() without checking
// o.defined(). Fix: KILN_CHECK(o.defined(), "expand_as: the target tensor is undefined").
TEST(ReviewFindings5, DISABLED_ExpandAsUndefinedSegfaults) {
  expect_error([] { ones({2, 3}).expand_as(Tensor()); }, "expand_as");
}

// ---- silent garbage ----

// Symptom: x.slice(0, 0, INT64_MAX, INT64_MAX) on a [2, 3] tensor gives sizes [-1, 3] (numel
// -3); x.slice(1, 0, 3, INT64_MAX - 1) gives [2, -1]. Using it then diverges between modes:
// eagerly contiguous()/print raise "out of memory: could not allocate 18446744073709551604
// bytes" and sum() throws std::bad_alloc (not a kiln::Error); with KILN_JIT=1 contiguous()
// "succeeds" with numel 3 and printing shows tensor([]). torch gives size 1 ([1, 3]).
// Root cause: ops/views.cpp slice_meta computes (end - start + step - 1) / step, which
// overflows for a step near INT64_MAX. Fix: size = end == start ? 0 : (end - start - 1) / step
// + 1 (and compute the stride product with an overflow check).
TEST(ReviewFindings5, DISABLED_SliceHugeStepNegativeSize) {
  Tensor x = ones({2, 3});
  EXPECT_EQ(x.slice(0, 0, INT64_MAX, INT64_MAX).sizes(), (Shape{1, 3}));
  EXPECT_EQ(x.slice(1, 0, 3, INT64_MAX - 1).sizes(), (Shape{2, 1}));
}

// Symptom: x.narrow(0, INT64_MAX, 1) and x.narrow(0, 1, INT64_MAX) on a [2, 3] tensor return an
// empty [0, 3] tensor instead of raising (narrow(0, 1, 5) does raise).
// Root cause: ops/views.cpp Tensor::narrow checks start + length <= size, and start + length
// overflows to a negative number. Fix: check start <= size && length <= size - start.
TEST(ReviewFindings5, DISABLED_NarrowOverflowNotRejected) {
  Tensor x = ones({2, 3});
  expect_error([&] { x.narrow(0, INT64_MAX, 1); }, "narrow");
  expect_error([&] { x.narrow(0, 1, INT64_MAX); }, "narrow");
}

// Symptom: chunk(x, INT64_MAX) on a [2, 3] tensor raises "split: split size must be
// non-negative, got -1": the error names split and a size the user never passed; torch returns
// two [1, 3] chunks. Root cause: ops/shape.cpp chunk() computes (n + chunks - 1) / chunks,
// which overflows (split() has the same (n + size - 1) / size overflow, signed-overflow UB that
// happens to give 1 piece). Fix: n / chunks + (n % chunks != 0), and likewise in split().
TEST(ReviewFindings5, DISABLED_ChunkHugeCountOverflows) {
  std::vector<Tensor> parts;
  try {
    parts = chunk(ones({2, 3}), INT64_MAX);
  } catch (const Error& e) {
    ADD_FAILURE() << "chunk raised: " << e.what();
  }
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].sizes(), (Shape{1, 3}));
}

// Symptom: arange(0, 4e9, 1e9, kInt32) gives [0, 1000000000, 2000000000, -2147483648] and
// linspace(0, 3e9, 4, kInt32) gives [0, -715827882, -1431655765, -2147483648]: values that do
// not fit Int32 wrap silently (round 4 made full/fill_/masked_fill raise for this).
// Root cause: ops/ranges.cpp arange_eager/linspace_eager static_cast each double value to T
// unchecked, and arange_meta/linspace_meta never check the range's endpoints against the
// dtype. Fix: in the metas, check that start and the last value (start + (n-1)*step; end for
// linspace) fit the dtype, as full() does ("arange: value 3e9 cannot be converted to Int32
// without overflow").
TEST(ReviewFindings5, DISABLED_IntegerRangesWrapSilently) {
  expect_error([] { arange(0, 4e9, 1e9, kInt32); }, "arange");
  expect_error([] { linspace(0, 3e9, 4, kInt32); }, "linspace");
}

// ---- error messages that do not name the op ----

// Symptom: an undefined tensor passed to linear, dropout, scaled_dot_product_attention, or used
// as `this` of reshape/transpose/t/flatten/narrow/to/contiguous/item/backward raises only "the
// tensor is undefined (default-constructed)", naming no op (cat/stack/split/matmul/save_npy/
// *_like/one_hot do name theirs). Root cause: these paths reach Tensor::checked()
// (runtime/tensor.cpp) or a metadata accessor before any op-specific check; linear
// (ops/nn.cpp) calls w.dim() first. Fix: check defined() at the top of each public entry with
// the op's name (or have checked() take the op name), e.g. "linear: weight is an undefined
// tensor".
TEST(ReviewFindings5, DISABLED_UndefinedTensorErrorsDoNotNameTheOp) {
  Tensor u, x = ones({2, 3});
  expect_error([&] { linear(x, u); }, "linear");
  expect_error([&] { dropout(u, 0.5, true); }, "dropout");
  expect_error([&] { scaled_dot_product_attention(u, x, x); }, "scaled_dot_product_attention");
  expect_error([&] { u.reshape({1}); }, "reshape");
  expect_error([&] { u.item<float>(); }, "item");
  expect_error([&] { u.backward(); }, "backward");
}

// Symptom: linear(ones({3}), ones({4, 3}), ones({5})) raises "add: shapes [4] and [5] cannot be
// broadcast together": the message names add, not linear, and not the bias. Likewise an
// optimizer step whose parameter's grad has the wrong shape raises "sub: shapes [2] and [3]"
// (SGD) / "add: ..." (Adam). Root cause: ops/nn.cpp linear() adds the bias without checking its
// shape; ops/optim/sgd.cpp and adam.cpp use the grad without checking it against the parameter.
// Fix: check the bias against w's output size in linear ("linear: bias [5] does not match the
// weight's 4 outputs"), and the grad's shape/dtype against the parameter in Optimizer::step.
TEST(ReviewFindings5, DISABLED_LinearBiasAndOptimizerGradErrorsNameWrongOp) {
  expect_error([] { linear(ones({3}), ones({4, 3}), ones({5})); }, "linear");
  expect_error(
      [] {
        Tensor w = ones({2}).requires_grad_();
        (w * w).sum().backward();
        w.mutable_grad() = ones({3});
        optim::SGD opt({w}, optim::SGDOptions(0.1));
        opt.step();
      },
      "SGD");
}

}  // namespace
}  // namespace kiln

// ---- shell-command checks (build/release/examples/eager_tour) ----
//
// Every KILN_* variable in the README table was tried with bad values: KILN_JIT=2,
// KILN_JIT_THRESHOLD=-1/abc, KILN_JIT_ASYNC=maybe, KILN_JIT_RECOMPILE_LIMIT=99999999999,
// KILN_JIT_SEGMENT_LIMIT=0, KILN_JIT_VALIDATE=2, KILN_DEVICE=gpu/cuda:/cuda:-1,
// KILN_NUM_THREADS=-1/4097, KILN_LOG=bogus/ops=/=debug/foo=debug, KILN_CPU_ISA=avx9/AVX2,
// KILN_STATS=2. Each raises a kiln::Error naming the variable and the accepted values (the
// example does not catch it, so the process aborts with "terminate called after throwing an
// instance of 'kiln::Error'", rc 134: that is the example's choice, not a kiln bug).
// KILN_NUM_THREADS=0 and =4096 run normally. KILN_PROFILE=/nonexistent/dir/t.json prints
// "kiln: profiler: cannot open the trace file ..." at exit, rc 0. KILN_JIT=1
// KILN_DUMP=/proc/kiln or /dev/null/x logs a tracer warning per region, rc 0.
// No config finding.
//
// Malformed .npy files (empty, truncated magic/header/data, header length 0xFFFFFFF0,
// unterminated dict/tuple, negative or 10^23 dims, structured descr, <f2, a directory, v3 with
// invalid UTF-8) all raise load_npy errors. Two minor notes, not made tests:
//  - a fortran_order file with more than 64 dims raises "permute: tensors of more than 64 dims
//    are not supported" (names permute, not load_npy);
//  - a directory path raises "truncated file: ... needs 8 bytes, only 0 present".
