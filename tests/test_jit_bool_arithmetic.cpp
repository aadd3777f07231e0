// Ops that compute in Bool fuse into kernels (jit/lower/lowering.cpp, computes_via_int): add,
// mul, maximum, minimum and the compares of two Bools, with a Bool scalar on either side; where
// and masked_fill giving a Bool (masked_fill's value converted as eager converts it, a promoted
// one too); sign and isnan of a Bool, isnan of integers. Each program is one kernel with no eager
// step, bitwise equal to eager, on every ISA path; before, each such op was an eager step that
// split its chain into three kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_device_util.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "suite_passes.h"

namespace kiln::testing {
namespace {

using JitBoolArithmeticTest = JitRecordedTest<>;

struct Program {
  const char* name;
  std::function<TensorList(int)> run;
};

// Every program fused into exactly one kernel, no eager step, bitwise equal to eager (six
// iterations: the first records and plans, the others replay; a scalar that changes is promoted
// at the second and the new plan runs from the third), on every ISA path.
void expect_one_kernel_each(const std::vector<Program>& programs) {
  for (const std::string& isa : supported_jit_isas()) {
    ConfigOverride<std::string> force(config().jit_isa, isa);
    for (const Program& p : programs) {
      tracer::wait_for_compiles();
      tracer::RegionCache::instance().clear();
      int kernels = 0;
      const std::string what = std::string(p.name) + " on " + isa;
      EXPECT_EQ(plan_eager_steps(p.run, 6, what, &kernels), 0) << what;
      EXPECT_EQ(kernels, 1) << what;
    }
  }
}

TEST_F(JitBoolArithmeticTest, BoolArithmeticAndComparesOfBoolsAreOneKernel) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  // 37 columns: a vector loop and a tail on every ISA. Masks: one computed in the kernel, a
  // Bool input broadcast along the rows, a transposed (strided) Bool input.
  const Tensor x = eager_normal({23, 37}, 1), y = eager_normal({23, 37}, 2);
  Tensor rows, cols;
  {
    JitMode off(false);
    rows = normal({1, 37}, 3) < 0;
    cols = normal({37, 23}, 4) > 0;
  }
  auto masks = [&](int it) { return TensorList{x > 0.25 * it, rows, cols.t()}; };
  const std::vector<Program> programs = {
      {"a + b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] + m[1]) * x};
       }},
      {"a * b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] * m[2]) * x};
       }},
      {"maximum",
       [&](int it) {
         auto m = masks(it);
         return TensorList{maximum(m[0], m[1]) * x};
       }},
      {"minimum",
       [&](int it) {
         auto m = masks(it);
         return TensorList{minimum(m[2], m[1]) * y};
       }},
      {"a == b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] == m[1]) * x};
       }},
      {"a != b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] != m[2]) * x};
       }},
      {"a < b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] < m[1]) * x};
       }},
      {"a <= b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] <= m[2]) * x};
       }},
      {"a > b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[1] > m[0]) * y};
       }},
      {"a >= b",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[2] >= m[0]) * y};
       }},
      // A Bool scalar on either side, and a Bool result stored as it is.
      {"a + true",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] + true) * x};
       }},
      {"false * a",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(false * m[0]) * x, m[0] * true};
       }},
      {"a == false",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[0] == false) * x};
       }},
      {"a < true",
       [&](int it) {
         auto m = masks(it);
         return TensorList{(m[2] < true) * y};
       }},
      {"chain",
       [&](int it) {
         auto m = masks(it);
         return TensorList{where((m[0] * m[1]) != m[2], x, y), m[0] + m[1] * m[2]};
       }},
  };
  expect_one_kernel_each(programs);
}

TEST_F(JitBoolArithmeticTest, WhereAndMaskedFillGivingBoolAreOneKernel) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  const Tensor x = eager_normal({19, 41}, 5), y = eager_normal({19, 41}, 6);
  Tensor r;  // a Bool input broadcast along the rows
  {
    JitMode off(false);
    r = normal({1, 41}, 7) < 0;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Program> programs = {
      {"where bool", [&](int it) { return TensorList{where(x > 0.1 * it, y > 0, r) * x}; }},
      // masked_fill's value becomes a Bool as eager converts it: 0.5 and NaN are true.
      {"masked_fill true",
       [&](int it) { return TensorList{(x > 0).masked_fill(y > 0.1 * it, true) * x}; }},
      {"masked_fill false",
       [&](int it) { return TensorList{(x > 0.1 * it).masked_fill(r, false) * y}; }},
      {"masked_fill 0.5",
       [&](int it) { return TensorList{(x > 0.1 * it).masked_fill(y > 0, 0.5) * x}; }},
      {"masked_fill nan",
       [&](int it) { return TensorList{(x > 0.1 * it).masked_fill(y > 0, nan) * x}; }},
      // A value that changes every iteration: the region promotes it to a kernel parameter.
      {"masked_fill promoted",
       [&](int it) {
         const double v[] = {0.0, 0.5, nan, 0.25, -0.0, 0.5};
         return TensorList{(x > 0).masked_fill(y > 0, v[it]) * x};
       }},
  };
  expect_one_kernel_each(programs);
}

TEST_F(JitBoolArithmeticTest, SignAndIsnanOfBoolsAndIntegersAreOneKernel) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  const Tensor x = eager_normal({29, 31}, 8);
  Tensor i32, i64;
  {
    JitMode off(false);
    i32 = (x * 100).to(kInt32);
    i64 = (x * 100).to(kInt64);
  }
  const std::vector<Program> programs = {
      {"sign bool", [&](int it) { return TensorList{sign(x > 0.1 * it) * x}; }},
      {"isnan bool", [&](int it) { return TensorList{isnan(x > 0.1 * it) + (x > 0)}; }},
      {"isnan int32", [&](int it) { return TensorList{isnan(i32 + it) * x}; }},
      {"isnan int64", [&](int it) { return TensorList{where(isnan(i64 * it), x, -x)}; }},
  };
  expect_one_kernel_each(programs);
}

// The same ops on CUDA tensors: the CUDA op kernels (jit/cuda/op_kernel.cpp) take the same
// lowering, eager and recorded; bitwise equal to the CPU, Bool scalars and masked_fill's value
// converted as the CPU converts them.
TEST_F(JitBoolArithmeticTest, CudaBoolArithmeticMatchesTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto program = [nan](const Tensor& x, const Tensor& y, const Tensor& r) {
    const Tensor a = x > 0, b = y > 0, c = r < 0;
    return TensorList{a + b,
                      a * c,
                      maximum(a, c),
                      minimum(b, a),
                      a == c,
                      a != b,
                      a < b,
                      b >= c,
                      a + true,
                      false * b,
                      a == false,
                      where(x > y, a, c),
                      b.masked_fill(a, true),
                      b.masked_fill(c, 0.5),
                      b.masked_fill(a, nan),
                      a.masked_fill(b, false),
                      sign(a),
                      isnan(a),
                      isnan((x * 100).to(kInt32)),
                      isnan((y * 100).to(kInt64))};
  };
  const Tensor x = eager_normal({37, 45}, 9), y = eager_normal({37, 45}, 10),
               r = eager_normal({1, 45}, 11);
  TensorList want;
  {
    JitMode off(false);
    want = program(x, y, r);
  }
  const Tensor gx = x.to(kGpu), gy = y.to(kGpu), gr = r.to(kGpu);
  for (bool recorded : {false, true}) {
    TensorList got;
    {
      JitMode mode(recorded);
      got = program(gx, gy, gr);
      kiln::sync();
    }
    TensorList host;
    for (const Tensor& t : got) host.push_back(t.to(Device::cpu()));
    expect_lists_bitwise_equal(host, want, recorded ? "recorded on CUDA" : "eager on CUDA");
  }
}

}  // namespace
}  // namespace kiln::testing
