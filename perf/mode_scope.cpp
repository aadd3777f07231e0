// See perf/mode_scope.h.
#include "perf/mode_scope.h"

#include "jit/cpu/baseline_kernel.h"
#include "jit/cpu/cpu_target.h"
#include "jit/plan/planner.h"
#include "kiln/kiln.h"
#include "perf/run_disk_cache.h"
#include "tracer/region_runner.h"

namespace kiln::perf {

ModeScope::ModeScope(const std::string& mode)
    : saved_jit_(config().jit),
      saved_async_(config().jit_async),
      saved_planner_(tracer::current_planner()) {
  sync();  // nothing recorded before the job may leak into its first run
  records_ = mode == "interp" || mode == "jit";
  compiles_ = mode == "jit";
  if (records_) {
    tracer::wait_for_compiles();  // no planning job of an earlier job still running
    tracer::RegionCache::instance().clear();
    // A jit job starts cold: no kernel an earlier job rendered, in memory or on disk (its first
    // call renders every kernel it needs, as a program's first run does; its warm-disk first
    // call then loads them).
    if (compiles_) {
      jit::forget_cpu_kernels();
      use_fresh_job_disk_cache();
    }
    // interp must never compile, whatever is installed; jit uses the JIT's planner even where a
    // program installed another one.
    tracer::set_planner(compiles_ ? &jit::planner() : nullptr);
  }
  config().jit_async = compiles_ ? false : saved_async_;
  config().jit = records_;
}

ModeScope::~ModeScope() {
  // Flush what a failed run left recorded while still in the job's mode, then restore.
  try {
    sync();
    tracer::wait_for_compiles();
  } catch (...) {  // the job's own error is already on its way out
  }
  config().jit = saved_jit_;
  config().jit_async = saved_async_;
  tracer::set_planner(saved_planner_);
}

void RegionTally::end() {
  tracer::CacheCounters after = tracer::RegionCache::instance().counters();
  hits += after.hits - before_.hits;
  misses += after.misses - before_.misses;
  uncached += after.uncached - before_.uncached;
}

void JitTally::begin() {
  first_ = jit::cpu_jit_compile_count();
  first_baseline_ = jit::cpu_jit_baseline_count();
  launches_before_ = jit::cpu_jit_counters().launches.load();
}

void JitTally::end() {
  std::vector<int64_t> more = jit::cpu_jit_compile_times(first_);
  compile_ns.insert(compile_ns.end(), more.begin(), more.end());
  more = jit::cpu_jit_baseline_times(first_baseline_);
  baseline_ns.insert(baseline_ns.end(), more.begin(), more.end());
  launches += jit::cpu_jit_counters().launches.load() - launches_before_;
}

}  // namespace kiln::perf
