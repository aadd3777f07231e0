// See perf/mode_scope.h.
#include "perf/mode_scope.h"

#include "kiln/kiln.h"

namespace kiln::perf {

ModeScope::ModeScope(const std::string& mode)
    : saved_jit_(config().jit), saved_planner_(tracer::current_planner()) {
  sync();  // nothing recorded before the job may leak into its first run
  records_ = mode == "interp";
  // plan() refuses jit until a backend exists; interp must never compile, whatever is installed.
  if (records_) tracer::set_planner(nullptr);
  config().jit = records_;
}

ModeScope::~ModeScope() {
  // Flush what a failed run left recorded while still in the job's mode, then restore.
  try {
    sync();
  } catch (...) {  // the job's own error is already on its way out
  }
  config().jit = saved_jit_;
  tracer::set_planner(saved_planner_);
}

void RegionTally::end() {
  tracer::CacheCounters after = tracer::RegionCache::instance().counters();
  hits += after.hits - before_.hits;
  misses += after.misses - before_.misses;
  uncached += after.uncached - before_.uncached;
}

}  // namespace kiln::perf
