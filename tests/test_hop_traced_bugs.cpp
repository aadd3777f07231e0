// Known differences between the traced higher-order ops and eager mode, found by the tests of
// test_hop_traced*.cpp. Each test is DISABLED_ until the tracer is fixed; it fails today (run
// with --gtest_also_run_disabled_tests) and should pass, unchanged, once it is.
#include "hop_traced_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

// BUG: outputs of a traced body that alias each other (the same tensor returned twice, or a view
// of another output) come back as independent tensors: Segment::record_hop makes one fresh lazy
// tensor per result and the flush hands each over (or copies it) separately. Eagerly they share
// storage, so a later in-place write through one output shows through the other; recorded it
// does not, and the results differ between KILN_JIT=0 and 1. (finish() only falls back for
// outputs that alias the op's inputs or captures, not for outputs that alias each other.)
TEST(HopTracedBugs, DISABLED_OutputsThatAliasEachOtherKeepEagersAliasing) {
  auto same_twice = [] {
    TensorList out = cond(
        scalar_tensor(true),
        [](const TensorList& a) {
          Tensor t = a[0] * 2.0;
          return TensorList{t, t};
        },
        [](const TensorList& a) {
          Tensor t = a[0] * 3.0;
          return TensorList{t, t};
        },
        {ramp({3})});
    out[0].add_(100.0);
    return TensorList{out[0], out[1]};  // eagerly both are the written tensor
  };
  expect_recorded_matches_eager(same_twice, "the same output twice");
  auto view_of_output = [] {
    Region r = region("hop_traced_bug_view", [](const TensorList& a) {
      Tensor t = a[0] * 2.0;
      return TensorList{t, t.slice(0, 0, 2)};
    });
    TensorList out = r({ramp({3, 2})});
    out[0].add_(100.0);
    return out;  // eagerly out[1] is rows 0..1 of the written out[0]
  };
  expect_recorded_matches_eager(view_of_output, "an output that is a view of another");
}

// BUG: a result that eagerly is a strided view of a body's value (here a transpose) is recorded
// with row-major strides (record_hop drops the result's strides), so its layout differs between
// modes: eagerly y.is_contiguous() is false and y.view({6}) raises, recorded neither holds. The
// values are the same.
TEST(HopTracedBugs, DISABLED_ResultsKeepEagersStrides) {
  auto program = [] {
    Tensor x = ramp({2, 3});
    return cond(
        x.sum() > 0.0, [](const TensorList& a) { return TensorList{(a[0] * 2.0).t()}; },
        [](const TensorList& a) { return TensorList{(a[0] * 3.0).t()}; }, {x});
  };
  const TensorList want = run_eagerly(program);
  const TensorList got = run_recorded(program);
  expect_lists_bitwise_equal(got, want, "transposed result");
  EXPECT_EQ(got[0].strides(), want[0].strides());
  EXPECT_EQ(got[0].is_contiguous(), want[0].is_contiguous());
}

// DOUBTFUL (design): compile's trace binds the tensors fn captured when it was traced. A
// variable captured by reference and reassigned between calls (w = new tensor, not an in-place
// update) is read by fn eagerly, but the recorded replay still reads the old tensor: the results
// differ between KILN_JIT=0 and 1, silently. torch.compile guards on such captures; hop.h only
// says "the tensors fn captured are read as they are at each call".
TEST(HopTracedBugs, DISABLED_CompileSeesAReassignedCapture) {
  Tensor w = ones({3});
  CompiledFn f = compile([&](const TensorList& a) { return TensorList{a[0] * w}; });
  JitMode jit(true);
  Tensor x = ramp({3});
  f({x});
  w = full({3}, 5.0);
  Tensor y = f({x})[0];
  Tensor want;
  {
    JitMode off(false);
    want = x * w;
  }
  expect_bitwise_equal(y, want, "after w was reassigned");
}

}  // namespace
