// The reduction kernels compiled for baseline x86-64, AVX2 and AVX-512 give identical bits (they
// keep one accumulation order; -ffp-contract=off), for every op on row, column and gathered
// layouts.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "isa_util.h"
#include "kiln/kiln.h"
#include "ops/reduce_isa.h"

using namespace kiln;

namespace {

TEST(ReduceIsa, KernelsGiveIdenticalBitsOnEveryIsa) {
  // Baseline against every ISA up to the active one (a CPU with AVX2 only, or KILN_CPU_ISA=avx2,
  // still checks AVX2 against baseline; tests/isa_util.h).
  const int isas = kiln::testing::isas_to_compare("ReduceIsa.KernelsGiveIdenticalBitsOnEveryIsa");
  if (isas < 2) GTEST_SKIP() << "only the baseline ISA here: nothing to compare with";
  const bool has_avx512 = isas == 3;
  manual_seed(3);
  Tensor base = randn({333, 517});
  struct Case {
    OpId op;
    Tensor x;
    DimVector dims;
  };
  std::vector<Case> cases;
  for (const Tensor& x : {base, base.t(), base.slice(1, 0, 517, 3), base.to(kFloat64)}) {
    for (OpId op : {OpId::Sum, OpId::Mean, OpId::Prod, OpId::Amax, OpId::Amin, OpId::Logsumexp,
                    OpId::Var, OpId::Argmax})
      for (DimVector dims : {DimVector{1}, DimVector{0}}) cases.push_back({op, x, dims});
    cases.push_back({OpId::Sum, x, DimVector{}});
  }
  int checked = 0;
  for (const Case& c : cases) {
    Attrs a;
    a.dims = c.dims;
    a.ints[1] = 1;  // Var: unbiased
    const Tensor in[] = {c.x};
    Tensor ref = dispatch(c.op, in, a);  // the active ISA, for the output's shape and dtype
    OpCall call{c.op, in, a};
    Tensor outs[3] = {empty_like(ref), empty_like(ref), empty_like(ref)};
    isa_baseline::reduce_eager(call, outs[0]);
    isa_avx2::reduce_eager(call, outs[1]);
    if (has_avx512) isa_avx512::reduce_eager(call, outs[2]);
    size_t bytes = ref.numel() * itemsize(ref.dtype());
    for (int k = 1; k < (has_avx512 ? 3 : 2); ++k)
      EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), outs[k].raw_data(), bytes))
          << op_name(c.op) << " isa " << k;
    EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), ref.raw_data(), bytes)) << op_name(c.op);
    ++checked;
  }
  EXPECT_EQ(checked, 68);
}

}  // namespace
