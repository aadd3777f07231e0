#include "runtime/fork_handlers.h"

#include <pthread.h>

#include <array>
#include <mutex>
#include <new>
#include <vector>

namespace kiln {

namespace {

constexpr int kStages = static_cast<int>(ForkStage::Libraries) + 1;

struct Registry {
  std::mutex mu;  // held across fork(): a registration racing with it waits for it
  std::array<std::vector<ForkHandlers>, kStages> stages;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: a fork may come during exit
  return *r;
}

void prepare_all() {
  Registry& r = registry();
  r.mu.lock();
  for (auto& stage : r.stages)
    for (const ForkHandlers& h : stage)
      if (h.prepare) h.prepare();
}

void after_fork(bool child) {
  Registry& r = registry();
  for (auto stage = r.stages.rbegin(); stage != r.stages.rend(); ++stage)
    for (auto h = stage->rbegin(); h != stage->rend(); ++h) {
      void (*after)() = child ? h->in_child : h->in_parent;
      if (after) after();
    }
  if (child)
    remake_after_fork(r.mu);
  else
    r.mu.unlock();
}

}  // namespace

void on_fork(ForkStage stage, ForkHandlers handlers) {
  static const bool hooked = [] {
    pthread_atfork(
        prepare_all, [] { after_fork(false); }, [] { after_fork(true); });
    return true;
  }();
  (void)hooked;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.stages[static_cast<int>(stage)].push_back(handlers);
}

}  // namespace kiln
