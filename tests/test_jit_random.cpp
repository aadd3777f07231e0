// Random numbers in JIT kernels (docs/random.md): the RandUniform expression rendered on every
// ISA path against random_uniform<T>(seed, counter + i) (ops/random.h, itself tested against an
// independent Philox in tests/test_random.cpp), with i the row-major index of the index space:
// ranks 1 to 3, transposed and gapped outputs (the index follows the index space, not memory),
// counters whose low word wraps inside a vector, seeds with both words set, above the parallel
// grain on one and two threads (rows and inner ranges split); and dropout and rand recorded and
// fused into kernels with their producers and consumers, bitwise equal to eager, with baked and
// promoted probabilities (randn stays eager).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/render.h"
#include "jit/plan/jit_plan.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "ops/random.h"
#include "record_util.h"
#include "runtime/parallel.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

using testing::canonical_bits;
using testing::ConfigOverride;
using testing::JitMode;
using testing::JitRestore;

// out0 = u, out1 = x + u, with u = RandUniform over params 0..3.
jit::LoopKernel uniform_kernel(DType t) {
  jit::LoopKernel k;
  k.inputs = {t};
  k.params.assign(4, DType::Int32);
  const int32_t u = k.rand_uniform(0, t);
  k.stores = {u, k.binary(jit::ExprOp::Add, k.load(0), u)};
  return k;
}

template <class T>
void uniform_on(const std::string& isa) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const jit::LoopKernel k = uniform_kernel(dtype);
  std::shared_ptr<jit::CompiledKernel> ck;
  {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    ck = jit::cpu_target().compile(k);
  }
  const auto es = static_cast<int64_t>(sizeof(T));
  struct Case {
    std::vector<int64_t> sizes;
    int form;  // 0 row-major output, 1 transposed (last two dims), 2 gapped rows
    int threads;
  };
  const std::vector<Case> cases = {{{1}, 0, 1},        {{7}, 0, 1},        {{16}, 0, 1},
                                   {{37}, 0, 1},       {{5, 19}, 1, 1},    {{3, 4, 17}, 2, 1},
                                   {{3, 1, 33}, 0, 1}, {{300, 131}, 0, 2}, {{2, 70000}, 0, 2},
                                   {{300, 131}, 1, 2}};
  const uint64_t seeds[] = {0, 67280421310721ull, 0xfedcba9876543210ull};
  const uint64_t counters[] = {0, 0xfffffff5ull, 0x00000001fffffff0ull, 123456789012345ull};
  for (const Case& cs : cases) {
    const size_t r = cs.sizes.size();
    int64_t n = 1;
    for (int64_t s : cs.sizes) n *= s;
    // Element strides of the outputs: row-major, or transposed / gapped.
    DimVector st(r, 0);
    int64_t len = 1;
    {
      std::vector<size_t> order(r);
      for (size_t d = 0; d < r; ++d) order[d] = d;
      if (cs.form == 1 && r >= 2) std::swap(order[r - 1], order[r - 2]);
      for (size_t i = r; i-- > 0;) {
        st[order[i]] = len;
        len = len * cs.sizes[order[i]] + (cs.form == 2 ? 3 : 0);
      }
    }
    for (uint64_t seed : seeds)
      for (uint64_t ctr : counters) {
        std::vector<T> x(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<T>(i % 7) - T(3);
        std::vector<std::vector<T>> out(2, std::vector<T>(static_cast<size_t>(len), T(-5)));
        jit::LaunchArgs la;
        la.sizes = DimVector(cs.sizes.begin(), cs.sizes.end());
        DimVector out_strides, in_strides(r, 0);
        for (size_t d = 0; d < r; ++d) out_strides.push_back(st[d] * es);
        for (size_t d = r, s = 1; d-- > 0; s *= static_cast<size_t>(cs.sizes[d]))
          in_strides[d] = static_cast<int64_t>(s) * es;
        for (auto& o : out) {
          la.ptrs.push_back(reinterpret_cast<char*>(o.data()));
          la.strides.push_back(out_strides);
        }
        la.ptrs.push_back(reinterpret_cast<char*>(x.data()));
        la.strides.push_back(in_strides);
        const std::vector<Scalar> params = {Scalar(static_cast<int64_t>(seed & 0xffffffffu)),
                                            Scalar(static_cast<int64_t>(seed >> 32)),
                                            Scalar(static_cast<int64_t>(ctr & 0xffffffffu)),
                                            Scalar(static_cast<int64_t>(ctr >> 32))};
        la.params = std::span<const Scalar>(params.data(), params.size());
        const int saved = config().num_threads;
        set_num_threads(cs.threads);
        ck->launch(la);
        set_num_threads(saved);
        int64_t bad = 0;
        std::vector<int64_t> idx(r, 0);
        for (int64_t i = 0; i < n; ++i) {  // i: the row-major index
          int64_t off = 0;
          for (size_t d = 0; d < r; ++d) off += idx[d] * st[d];
          const T u = random_uniform<T>(seed, ctr + static_cast<uint64_t>(i));
          const T want[2] = {u, x[static_cast<size_t>(i)] + u};
          for (int j = 0; j < 2; ++j)
            if (canonical_bits(out[j][static_cast<size_t>(off)]) != canonical_bits(want[j]) &&
                bad++ < 5)
              ADD_FAILURE() << isa << " " << dtype_name(dtype) << " case " << &cs - cases.data()
                            << " seed " << seed << " counter " << ctr << " element " << i
                            << " output " << j << ": got " << out[j][static_cast<size_t>(off)]
                            << ", want " << want[j];
          for (size_t d = r; d-- > 0;) {
            if (++idx[d] < cs.sizes[d]) break;
            idx[d] = 0;
          }
        }
        EXPECT_EQ(bad, 0);
      }
  }
}

TEST(JitRandom, UniformGivesEagerBitsEveryIsaLayoutAndSplit) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    uniform_on<float>(isa);
    uniform_on<double>(isa);
  }
  // Float32 draws keep a Float32 kernel at full width (the Philox words are 32-bit lanes).
  EXPECT_EQ(jit::cpu_kernel_lanes(uniform_kernel(kFloat32), jit::JitIsa::Avx512), 16);
}

TEST(JitRandom, RandUniformIsVerified) {
  jit::LoopKernel k;
  k.params.assign(3, DType::Int32);
  k.stores = {k.rand_uniform(0, kFloat32)};
  EXPECT_THROW(k.verify(), Error);  // four params needed
  k.params.assign(4, DType::Int64);
  EXPECT_THROW(k.verify(), Error);  // Int32 words
  k.params.assign(4, DType::Int32);
  EXPECT_NO_THROW(k.verify());
  k.exprs[0].type = kInt32;
  EXPECT_THROW(k.verify(), Error);  // floats only
  EXPECT_NE(jit::to_text(uniform_kernel(kFloat64)).find("RandUniform p0 : Float64"),
            std::string::npos);
}

// ---- dropout through the recorder and the planner ----

using JitDropoutTest = testing::JitRecordedTest<>;

TEST_F(JitDropoutTest, DropoutFusesWithItsNeighboursAndGivesEagerBits) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType d : {kFloat32, kFloat64}) {
      for (const std::vector<int64_t>& shape :
           std::vector<std::vector<int64_t>>{{37}, {9, 33}, {300, 131}}) {
        tracer::RegionCache::instance().clear();
        Tensor x;
        {
          JitMode off(false);
          manual_seed(5);
          x = randn(IntList(shape), TensorOptions().dtype(d));
          x.view({-1}).slice(0, 0, 3).copy_(from_vector<double>({INFINITY, NAN, -0.0}, {3}).to(d));
        }
        auto program = [&](int it) {
          manual_seed(100 + static_cast<uint64_t>(it));
          Tensor a = dropout(x * 2.0, 0.1, true) + 1.0;  // 0.1: not a float; the bound rounds up
          Tensor b = dropout(x.exp(), 0.5, true) * dropout(x, 0.75, true);
          return TensorList{a, b};
        };
        int kernels = 0;
        const std::string what =
            isa + " " + std::string(dtype_name(d)) + " " + std::to_string(shape.size()) + "-d";
        EXPECT_EQ(testing::plan_eager_steps(program, 3, what, &kernels), 0) << what;
        EXPECT_EQ(kernels, 1) << what;
      }
    }
  }
}

// The input's layout does not move the draws: element i of x (row-major) draws counter + i.
TEST_F(JitDropoutTest, TransposedInputDrawsByRowMajorIndex) {
  Tensor x;
  {
    JitMode off(false);
    manual_seed(6);
    x = randn({40, 24});
  }
  auto program = [&](int it) {
    manual_seed(7 + static_cast<uint64_t>(it));
    return TensorList{dropout(x.t() + 0.5, 0.3, true)};
  };
  int kernels = 0;
  EXPECT_EQ(testing::plan_eager_steps(program, 3, "transposed", &kernels), 0);
}

// u is a multiple of 2^-24; kept iff u >= p in double. Seed 3945 draws u = float(0.7) =
// 0.699999988 (below 0.7) at element 2283 (found by a search over Philox draws): eager drops it,
// and so must the kernel, which compares in Float32 with the least float >= 0.7 (not float(0.7)).
TEST_F(JitDropoutTest, BakedProbabilityBoundRoundsUp) {
  ASSERT_EQ(random_uniform<float>(3945, 2283), 0.7f);
  Tensor x;
  {
    JitMode off(false);
    x = ones({4096});
  }
  auto program = [&](int) {
    manual_seed(3945);
    return TensorList{dropout(x, 0.7, true) + 0.0};
  };
  int kernels = 0;
  EXPECT_EQ(testing::plan_eager_steps(program, 2, "u == float(p)", &kernels), 0);
  JitMode off(false);
  manual_seed(3945);
  EXPECT_EQ(dropout(x, 0.7, true).view({-1})[2283].item<float>(), 0.0f);
}

// A probability that changes between iterations is promoted to a Float64 param: the compare
// and the scale in double, as eager computes them.
TEST_F(JitDropoutTest, PromotedProbability) {
  const double ps[] = {0.3, 0.1, 0.7, 1.0 / 3.0, 0.999, 1e-9};
  for (DType d : {kFloat32, kFloat64}) {
    tracer::RegionCache::instance().clear();
    Tensor x;
    {
      JitMode off(false);
      manual_seed(8);
      x = randn({13, 29}, TensorOptions().dtype(d));
    }
    auto program = [&](int it) {
      manual_seed(9);
      return TensorList{dropout(x - 1.0, ps[it], true) * 3.0};
    };
    int kernels = 0;
    EXPECT_EQ(testing::plan_eager_steps(program, 6, std::string(dtype_name(d)), &kernels), 0);
    EXPECT_EQ(kernels, 1);
    const auto regions = tracer::RegionCache::instance().regions();
    ASSERT_EQ(regions.size(), 1u);
    EXPECT_EQ(regions[0]->runtime_scalars().size(), 1u) << "p was promoted";
  }
}

// rand (Float32, Float64) is a RandUniform leaf: fused with its consumers (a Bernoulli mask
// `rand < p` into a where, a product with a broadcast input), alone in a kernel with no inputs
// (the index space is the node's shape), above the parallel grain on two threads.
TEST_F(JitDropoutTest, RandFusesWithItsConsumers) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType d : {kFloat32, kFloat64}) {
      tracer::RegionCache::instance().clear();
      Tensor x;
      {
        JitMode off(false);
        manual_seed(10);
        x = randn({7}, TensorOptions().dtype(d));
      }
      const TensorOptions o = TensorOptions().dtype(d);
      auto program = [&](int it) {
        manual_seed(20 + static_cast<uint64_t>(it));
        Tensor a = rand({5, 1, 7}, o) * x + 1.0;
        Tensor b = where(rand({3, 7}, o) < 0.3, x, x * 0.0);
        Tensor c = rand({300, 131}, o);
        return TensorList{a, b, c};
      };
      const int saved = config().num_threads;
      set_num_threads(2);
      int kernels = 0;
      const std::string what = isa + " " + std::string(dtype_name(d));
      EXPECT_EQ(testing::plan_eager_steps(program, 3, what, &kernels), 0) << what;
      set_num_threads(saved);
      EXPECT_EQ(kernels, 4) << what;  // a; x * 0 (shape [7]); b (rand, <, where); c
    }
  }
}

// randn stays an eager step: Box-Muller in double through libm's log and cos (docs/random.md),
// which a kernel's vector math would not reproduce bit for bit.
TEST_F(JitDropoutTest, RandnStaysEager) {
  auto program = [&](int it) {
    manual_seed(30 + static_cast<uint64_t>(it));
    return TensorList{randn({4, 9}) * 2.0};
  };
  int kernels = 0;
  EXPECT_EQ(testing::plan_eager_steps(program, 2, "randn", &kernels), 1);
  EXPECT_EQ(kernels, 1);
}

}  // namespace
}  // namespace kiln
