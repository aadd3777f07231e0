// The execution mode of one kiln-perf job (BENCHMARKS.md: eager, interp, jit), set for the job's
// runs and undone afterwards, plus the region-cache activity those runs caused.
#pragma once
#include <cstdint>
#include <string>

#include "tracer/backend.h"
#include "tracer/region_cache.h"

namespace kiln::perf {

// While alive: eager (config().jit = false) for "eager" and "libtorch"; for "interp", recording
// on and no JIT planner installed, so every flushed region is interpreted with the eager kernels
// and never compiled. The destructor restores config().jit and the planner (also on an error).
class ModeScope {
 public:
  explicit ModeScope(const std::string& mode);
  ~ModeScope();
  ModeScope(const ModeScope&) = delete;
  ModeScope& operator=(const ModeScope&) = delete;

  // Whether ops are recorded (their region-cache counts mean something).
  bool records() const { return records_; }

 private:
  bool records_ = false;
  bool saved_jit_;
  tracer::RegionPlanner* saved_planner_;
};

// Region-cache lookups summed over chosen stretches of time (the timed runs, not check()): the
// cache is process-wide, so each stretch is the difference of the counters before and after it.
class RegionTally {
 public:
  void begin() { before_ = tracer::RegionCache::instance().counters(); }
  void end();
  int64_t hits = 0, misses = 0, uncached = 0;

 private:
  tracer::CacheCounters before_;
};

}  // namespace kiln::perf
