// A differential fuzzer of gathered reductions run per block of rows (jit/plan/gathered_step.h)
// and of the pointwise steps that join their blocks (jit/plan/gathered_tail.h): random leaves
// (rank 3 or 4, Float32 or Float64, contiguous, a permuted storage or a narrowed one), random
// sets of reduced dims (scattered ones gather), statistics kept as keepdim values (mean, var,
// sum, amax, amin), then normalization-like expressions of the leaf (also transposed) and the
// statistics, and expressions of the statistics alone. Blocking forced (KILN_GATHER_BLOCK_MIN_KIB
// 0), 1 or 2 threads, the ISA path by seed; every result bitwise eager's. Seeds fixed;
// KILN_FUZZ_SEEDS and KILN_FUZZ_OFFSET override them.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fuzz/seeds.h"
#include "hop_traced_util.h"
#include "jit/plan/gathered_tail.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "record_util.h"
#include "runtime/config.h"
#include "suite_passes.h"
#include "tracer/region_cache.h"

namespace kiln {
namespace {

using testing::ConfigOverride;
using testing::JitMode;

// One random program over one leaf; run() gives its results.
struct GatheredProgram {
  std::vector<int64_t> sizes;  // the leaf's
  std::vector<int64_t> perm;   // form 1: the leaf is a permute(perm) of a contiguous storage
  int form = 0;                // 0 contiguous, 1 permuted storage, 2 narrowed along dim 0
  DType dtype = kFloat32;
  std::vector<int64_t> dims;  // reduced
  std::vector<int> stats;     // 0 mean, 1 var, 2 var unbiased, 3 sum, 4 amax, 5 amin
  std::vector<int> exprs;     // templates, below
  int64_t t0 = 0, t1 = 1;     // dims a transposed expression swaps
  std::string text;

  Tensor leaf(uint64_t seed) const {
    JitMode off(false);
    if (form == 1) {
      std::vector<int64_t> storage(sizes.size());
      for (size_t d = 0; d < perm.size(); ++d) storage[static_cast<size_t>(perm[d])] = sizes[d];
      return testing::normal(storage, seed, dtype).permute(IntList(perm));
    }
    if (form == 2) {
      std::vector<int64_t> wide = sizes;
      wide[0] += 2;
      return testing::normal(wide, seed, dtype).narrow(0, 1, sizes[0]);
    }
    return testing::normal(sizes, seed, dtype);
  }

  TensorList run(const Tensor& x) const {
    TensorList s;
    for (int k : stats) {
      switch (k) {
        case 0:
          s.push_back(x.mean(IntList(dims), true));
          break;
        case 1:
          s.push_back(x.var(IntList(dims), false, true));
          break;
        case 2:
          s.push_back(x.var(IntList(dims), true, true));
          break;
        case 3:
          s.push_back(x.sum(IntList(dims), true));
          break;
        case 4:
          s.push_back(x.amax(IntList(dims), true));
          break;
        default:
          s.push_back(x.amin(IntList(dims), true));
          break;
      }
    }
    TensorList out = s;
    const Tensor& a = s[0];
    const Tensor& b = s[s.size() - 1];
    for (int e : exprs) {
      switch (e) {
        case 0:
          out.push_back((x - a) * b);
          break;
        case 1:
          out.push_back((x - a) / sqrt(b * b + 0.5));
          break;
        case 2:
          out.push_back(exp(x - a) + b);
          break;
        case 3:
          out.push_back(x.transpose(t0, t1) * 2.0 - a.transpose(t0, t1));
          break;
        case 4:  // the statistics alone
          out.push_back(sqrt(b * b + 1.0) * 0.5 + a);
          break;
        default:
          out.push_back(x * a);
          break;
      }
    }
    return out;
  }
};

GatheredProgram make_program(uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 17);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % (hi - lo + 1));
  };
  GatheredProgram p;
  const int64_t rank = pick(3, 4);
  for (int64_t d = 0; d < rank; ++d) p.sizes.push_back(pick(seed % 4 == 0 ? 1 : 2, 7));
  p.dtype = rng() % 3 == 0 ? kFloat64 : kFloat32;
  p.form = static_cast<int>(rng() % 3);
  p.perm.resize(static_cast<size_t>(rank));
  std::iota(p.perm.begin(), p.perm.end(), 0);
  std::shuffle(p.perm.begin(), p.perm.end(), rng);
  // Reduced dims: half the programs batch norm's family (dim 0 and some after dim 1, dim 1
  // kept: the scattered sets eager gathers), the others a random proper subset.
  const bool norm_like = rng() % 2 == 0;
  while (p.dims.empty() || static_cast<int64_t>(p.dims.size()) == rank ||
         (norm_like && p.dims.size() < 2)) {
    p.dims.clear();
    for (int64_t d = 0; d < rank; ++d)
      if (norm_like ? d == 0 || (d >= 2 && rng() % 3 != 0) : rng() % 2 != 0) p.dims.push_back(d);
  }
  // Two or three statistics mostly (a lone mean or sum of a leaf is an eager step).
  for (int64_t n = pick(rng() % 4 == 0 ? 1 : 2, 3); n > 0; --n)
    p.stats.push_back(static_cast<int>(rng() % 6));
  for (int64_t n = pick(1, 3); n > 0; --n) p.exprs.push_back(static_cast<int>(rng() % 6));
  p.t0 = pick(0, rank - 1);
  p.t1 = pick(0, rank - 1);
  p.text = fmt::format("sizes {} form {} perm {} {} dims {} stats {} exprs {} transpose ({}, {})",
                       fmt::join(p.sizes, "x"), p.form, fmt::join(p.perm, ","), dtype_name(p.dtype),
                       fmt::join(p.dims, ","), fmt::join(p.stats, ","), fmt::join(p.exprs, ","),
                       p.t0, p.t1);
  return p;
}

TEST(JitGatheredFuzz, RandomStatisticsAndTheirTailsMatchEager) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  testing::JitRestore restore;
  ConfigOverride<int> min_kib(config().gather_block_min_kib, 0);
  ConfigOverride<bool> sync_planning(config().jit_async, false);
  ConfigOverride<int> threshold(config().jit_threshold, -1);
  ConfigOverride<bool> no_eager_tier(config().jit_eager_tier, false);
  const std::vector<std::string> isas = testing::supported_jit_isas();
  const fuzz::SeedRange seeds = fuzz::fuzz_seeds(400, false);
  const uint64_t count = seeds.count;
  const int64_t tails_before = jit::gathered_tail_runs();
  int failures = 0;
  for (uint64_t seed = seeds.first; seed < seeds.end() && failures < 5; ++seed) {
    const GatheredProgram p = make_program(seed);
    ConfigOverride<std::string> isa(config().jit_isa, isas[seed % isas.size()]);
    ConfigOverride<int> threads(config().num_threads, 1 + static_cast<int>(seed / 3 % 2));
    const std::string what = fmt::format("seed {} ({}, {} threads): {}", seed, config().jit_isa,
                                         config().num_threads, p.text);
    const Tensor x = p.leaf(seed);
    TensorList want;
    {
      JitMode off(false);
      want = p.run(x);
    }
    tracer::RegionCache::instance().clear();
    for (int it = 0; it < 2; ++it) {
      TensorList got;
      try {
        JitMode on(true);
        got = p.run(x);
        kiln::sync();
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << " threw: " << e.what();
        ++failures;
        break;
      }
      testing::expect_lists_bitwise_equal(got, want, what + ", run " + std::to_string(it));
      if (::testing::Test::HasFailure()) {  // report a few programs, not every later one
        ++failures;
        break;
      }
    }
  }
  // Not vacuous: many programs ran tail kernels in their blocks.
  if (count >= 100) {
    EXPECT_GT(jit::gathered_tail_runs() - tails_before, static_cast<int64_t>(count) / 10);
  }
  std::printf("gathered fuzz: %llu programs, %lld runs with a tail in the blocks\n",
              static_cast<unsigned long long>(count),
              static_cast<long long>(jit::gathered_tail_runs() - tails_before));
}

}  // namespace
}  // namespace kiln
