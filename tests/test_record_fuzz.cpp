// Random-program fuzzer for the recorder (KILN_JIT=1): each seed generates a program of 10-40
// steps over a pool of tensors (pointwise ops with broadcasting and mixed dtypes, reductions,
// matmul, softmax, views, in-place writes through views, random ops, reads, dropped handles).
// The program is run eagerly and recorded, and everything observable must be bitwise equal: every
// value read, every kiln::Error (same step, same message) and every tensor left in the pool
// (dtype, geometry, bytes). The generator, interpreter and comparison live in tests/fuzz/.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "fuzz/execute.h"
#include "kiln/kiln.h"
#include "record_util.h"
#include "tracer/region_cache.h"

namespace kiln {
namespace {

// Failed checks of the running test so far (gtest records a part per failure), so that the loops
// below stop after a few failing programs instead of reporting thousands.
int failed_checks() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
}

using kiln::testing::JitRestore;
using namespace kiln::fuzz;

constexpr uint64_t kSeeds = 3000;

TEST(RecordFuzz, RandomProgramsMatchEagerBitwise) {
  JitRestore restore;
  kiln::sync();
  tracer::RegionCache::instance().clear();  // the counts below assume a cold cache
  const tracer::CacheCounters c0 = tracer::RegionCache::instance().counters();
  int failures = 0;
  int64_t errors = 0, reads = 0;
  for (uint64_t seed = 1; seed <= kSeeds && failures < 3; ++seed) {
    const Program p = Generator(seed, seed).make();
    const Outcome eager = execute(p, false);
    const Outcome lazy = execute(p, true);
    // The second recording of the same program hits the region cache; it also flushes every few
    // ops, so values cross segment boundaries.
    const Outcome again = execute(p, true, static_cast<int>(seed % 4 == 0 ? 1 + seed % 7 : 0));
    const int before = failed_checks();
    expect_same(p, eager, lazy, "first recording");
    expect_same(p, eager, again, "second recording (cache hit or segment limit)");
    if (failed_checks() > before) ++failures;
    for (const std::string& l : eager.log)
      (l.find("error") != std::string::npos ? errors : reads)++;
  }
  // The recorder really ran (regions were made and reused), and the generator produced mostly
  // valid programs that read values; otherwise this test would check little.
  const tracer::CacheCounters c1 = tracer::RegionCache::instance().counters();
  EXPECT_GT(c1.misses - c0.misses, static_cast<int64_t>(kSeeds));
  EXPECT_GT(c1.hits - c0.hits, static_cast<int64_t>(kSeeds / 2));
  EXPECT_GT(reads, static_cast<int64_t>(kSeeds));
  EXPECT_LT(errors, reads * 2);
  // Some flushes repeat the one before them: the segment's follow path (tracer/flush_memo.h)
  // is compared bitwise too.
  EXPECT_GT(c1.repeats - c0.repeats, 0);
  std::printf("[fuzz] %llu programs, %lld reads, %lld errors compared, %lld repeated flushes\n",
              static_cast<unsigned long long>(kSeeds), static_cast<long long>(reads),
              static_cast<long long>(errors), static_cast<long long>(c1.repeats - c0.repeats));
}

// The same program structures with other scalars and data: the region cache promotes the scalars
// that changed to runtime inputs and must still reproduce eager's bits.
TEST(RecordFuzz, ScalarVariantsMatchEagerBitwise) {
  JitRestore restore;
  kiln::sync();
  tracer::RegionCache::instance().clear();  // the counts below assume a cold cache
  const tracer::CacheCounters c0 = tracer::RegionCache::instance().counters();
  int failures = 0;
  for (uint64_t seed = 1; seed <= kSeeds / 4 && failures < 3; ++seed) {
    for (uint64_t variant = 1; variant <= 3; ++variant) {
      const Program p = Generator(seed, seed * 1000 + variant).make();
      const Outcome eager = execute(p, false);
      const Outcome lazy = execute(p, true);
      const int before = failed_checks();
      expect_same(p, eager, lazy, "scalar variant");
      if (failed_checks() > before) ++failures;
    }
  }
  EXPECT_GT(tracer::RegionCache::instance().counters().promotions - c0.promotions, 0);
}

}  // namespace
}  // namespace kiln
