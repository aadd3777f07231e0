// Helpers for tests of the recorder: switching recording on and off around a block, and
// comparing tensors bit for bit (what "identical to eager" means).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kiln/kiln.h"
#include "tracer/region_cache.h"

namespace kiln::testing {

// Sets config().jit for the scope (flushing what the scope recorded), restores it after.
class JitMode {
 public:
  explicit JitMode(bool on) : saved_(config().jit) {
    kiln::sync();
    config().jit = on;
  }
  ~JitMode() {
    kiln::sync();
    config().jit = saved_;
  }
  JitMode(const JitMode&) = delete;
  JitMode& operator=(const JitMode&) = delete;

 private:
  bool saved_;
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
inline std::vector<unsigned char> bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.raw_data());
  return std::vector<unsigned char>(p, p + c.numel() * itemsize(c.dtype()));
}

inline void expect_bitwise_equal(const Tensor& a, const Tensor& b, const char* what = "") {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(bytes_of(a) == bytes_of(b)) << what << ": values differ: " << a << " vs " << b;
}

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
