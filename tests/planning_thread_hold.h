// Holds the planning thread (tracer::run_in_background's) until release() or the end of the
// scope: jobs queued meanwhile wait behind it, so a test sees a kernel before its background
// rendering lands.
#pragma once
#include <future>

#include "tracer/region_runner.h"

namespace kiln::testing {

class PlanningThreadHold {
 public:
  PlanningThreadHold() {
    tracer::wait_for_compiles();
    tracer::run_in_background([f = go_.get_future().share()] { f.wait(); });
  }
  ~PlanningThreadHold() { release(); }
  PlanningThreadHold(const PlanningThreadHold&) = delete;
  PlanningThreadHold& operator=(const PlanningThreadHold&) = delete;
  void release() {
    if (!released_) go_.set_value();
    released_ = true;
  }

 private:
  std::promise<void> go_;
  bool released_ = false;
};

}  // namespace kiln::testing
