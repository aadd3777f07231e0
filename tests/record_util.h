// Helpers for tests of the recorder: switching recording on and off around a block, and
// comparing tensors bit for bit (what "identical to eager" means).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kiln/kiln.h"
#include "runtime/init.h"
#include "tracer/backend.h"
#include "tracer/region_cache.h"

namespace kiln::testing {

// Sets config().jit for the scope (flushing what the scope recorded), restores it after. The
// eager tier (tracer/eager_tier.h) is off in the scope: the tests that switch recording on check
// what recording does to each op, and their small tensors between syncs would otherwise run
// eagerly after a few iterations (tests/test_eager_tier.cpp tests the tier).
class JitMode {
 public:
  explicit JitMode(bool on) : saved_(config().jit), saved_tier_(config().jit_eager_tier) {
    kiln::sync();
    config().jit = on;
    config().jit_eager_tier = false;
  }
  ~JitMode() {
    kiln::sync();
    config().jit = saved_;
    config().jit_eager_tier = saved_tier_;
  }
  JitMode(const JitMode&) = delete;
  JitMode& operator=(const JitMode&) = delete;

 private:
  bool saved_;
  bool saved_tier_;
};

// Restores config().jit when a test ends, whatever it set (flushing what is pending; an error
// there was the test's to report).
class JitRestore {
 public:
  JitRestore() : saved_(config().jit) {}
  ~JitRestore() {
    try {
      kiln::sync();
    } catch (...) {
    }
    config().jit = saved_;
  }
  JitRestore(const JitRestore&) = delete;
  JitRestore& operator=(const JitRestore&) = delete;

 private:
  bool saved_;
};

// The tensor's elements in row-major order, as raw bytes (a sync point).
// The bytes of `t` (row-major), every NaN of a floating dtype written as the positive quiet NaN:
// the numerical contract (docs/numerics.md) leaves a NaN's sign and payload open (x86 passes on
// the first operand's NaN, and compilers order commutative operands freely).
inline std::vector<unsigned char> bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.raw_data());
  std::vector<unsigned char> out(p, p + c.numel() * itemsize(c.dtype()));
  if (c.dtype() == DType::Float32) {
    for (size_t i = 0; i + 4 <= out.size(); i += 4) {
      float f;
      std::memcpy(&f, out.data() + i, 4);
      if (f != f) std::memcpy(out.data() + i, "\x00\x00\xc0\x7f", 4);
    }
  } else if (c.dtype() == DType::Float64) {
    for (size_t i = 0; i + 8 <= out.size(); i += 8) {
      double x;
      std::memcpy(&x, out.data() + i, 8);
      if (x != x) std::memcpy(out.data() + i, "\x00\x00\x00\x00\x00\x00\xf8\x7f", 8);
    }
  }
  return out;
}

inline void expect_bitwise_equal(const Tensor& a, const Tensor& b, const char* what = "") {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(bytes_of(a) == bytes_of(b)) << what << ": values differ: " << a << " vs " << b;
}

// Installs `p` as the region planner for the scope (after kiln::init(), which installs the JIT's)
// and puts back the one before.
class PlannerOverride {
 public:
  explicit PlannerOverride(tracer::RegionPlanner* p) {
    ensure_initialized();
    saved_ = tracer::current_planner();
    tracer::set_planner(p);
  }
  ~PlannerOverride() { tracer::set_planner(saved_); }
  PlannerOverride(const PlannerOverride&) = delete;
  PlannerOverride& operator=(const PlannerOverride&) = delete;

 private:
  tracer::RegionPlanner* saved_;
};

// The region cache's counters, relative to when this object was made.
class CacheDelta {
 public:
  CacheDelta() : start_(tracer::RegionCache::instance().counters()) {}
  tracer::CacheCounters now() const {
    tracer::CacheCounters c = tracer::RegionCache::instance().counters();
    return {c.regions - start_.regions,   c.hits - start_.hits,
            c.misses - start_.misses,     c.promotions - start_.promotions,
            c.uncached - start_.uncached, c.repeats - start_.repeats};
  }

 private:
  tracer::CacheCounters start_;
};

}  // namespace kiln::testing
