// The execution mode of one kiln-perf job (BENCHMARKS.md: eager, interp, jit), set for the job's
// runs and undone afterwards, plus the region-cache and JIT activity those runs caused.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tracer/backend.h"
#include "tracer/region_cache.h"

namespace kiln::perf {

// While alive: eager (config().jit = false) for "eager", "libtorch" and "native" (the streaming
// copy of the ceiling); for "interp", recording on and no JIT planner installed, so every flushed
// region is interpreted with the eager kernels and never compiled; for "jit", recording on with
// the JIT planner (jit/plan/planner.h) and planning synchronous (config().jit_async = false), so
// that a region is planned and its kernels compiled inside the run that first sees it (the CPU
// plans at first sight) and every later run is the steady state. A recording mode starts from an
// empty region cache, so that its first call is a program's first call (and an interp job never
// runs a plan a jit job left in the cache). The destructor restores config().jit, jit_async and
// the planner (also on an error).
class ModeScope {
 public:
  explicit ModeScope(const std::string& mode);
  ~ModeScope();
  ModeScope(const ModeScope&) = delete;
  ModeScope& operator=(const ModeScope&) = delete;

  // Whether ops are recorded (their region-cache counts mean something).
  bool records() const { return records_; }
  // Whether the JIT compiles (its kernel counts mean something).
  bool compiles() const { return compiles_; }

 private:
  bool records_ = false, compiles_ = false;
  bool saved_jit_, saved_async_;
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

// CPU JIT kernels rendered between begin() and end() (jit::cpu_jit_compile_times: each one's
// time) and kernel launches. A jit job starts with no kernel of an earlier job (ModeScope),
// so its first call renders every kernel it needs.
class JitTally {
 public:
  void begin();
  void end();
  std::vector<int64_t> compile_ns;   // one per kernel rendered
  std::vector<int64_t> baseline_ns;  // one per kernel given baseline code (baseline_kernel.h)
  int64_t launches = 0;

 private:
  size_t first_ = 0, first_baseline_ = 0;
  int64_t launches_before_ = 0;
};

}  // namespace kiln::perf
