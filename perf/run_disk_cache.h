// kiln-perf's CPU kernel disk cache (jit/cpu/disk_cache.h): a folder of the run's own, removed
// at exit, and a fresh subfolder of it for each jit job, so that a job's first call renders
// every kernel it needs (a cold cache, whatever earlier runs left in KILN_CACHE_DIR or earlier
// jobs of this run stored) and its warm-disk first call loads them (perf/runner.cpp).
#pragma once
#include <string>

namespace kiln::perf {

class RunDiskCache {
 public:
  RunDiskCache();   // makes the run's folder (none made: the user's cache, as a program's)
  ~RunDiskCache();  // removes it
  RunDiskCache(const RunDiskCache&) = delete;
  RunDiskCache& operator=(const RunDiskCache&) = delete;
};

// Points the CPU kernel disk cache at a new, empty subfolder of the run's folder (ModeScope, at
// the start of each jit job); nothing without a run folder.
void use_fresh_job_disk_cache();

}  // namespace kiln::perf
