#include "runtime/fork_handlers.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <mutex>

#include "runtime/error.h"

namespace kiln {

namespace {

constexpr int kStages = static_cast<int>(ForkStage::Libraries) + 1;
constexpr int kPerStage = 16;  // kiln registers one handler set per stage

// Append-only: a fork reads each stage's published count, no lock, so a handler that waits for
// a thread (the planning stage's for the plan being made) never waits for one registering here
// (a first render, made in a plan, registers the disk cache writer's handlers). Registrations
// take `mu` among themselves only; it is never held across a fork.
struct Registry {
  std::mutex mu;
  std::array<std::array<ForkHandlers, kPerStage>, kStages> handlers;
  std::array<std::atomic<int>, kStages> published{};
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: a fork may come during exit
  return *r;
}

// The handlers this thread's prepare ran, per stage: the same ones run after its fork (a
// registration in between is not half run). Per thread: two threads may fork at once.
thread_local std::array<int, kStages> t_ran{};

void prepare_all() {
  Registry& r = registry();
  for (int s = 0; s < kStages; ++s) {
    t_ran[s] = r.published[s].load(std::memory_order_acquire);
    for (int i = 0; i < t_ran[s]; ++i)
      if (r.handlers[s][i].prepare) r.handlers[s][i].prepare();
  }
}

void after_fork(bool child) {
  Registry& r = registry();
  if (child) remake_after_fork(r.mu);  // another thread may have been registering
  for (int s = kStages - 1; s >= 0; --s)
    for (int i = t_ran[s] - 1; i >= 0; --i) {
      void (*after)() = child ? r.handlers[s][i].in_child : r.handlers[s][i].in_parent;
      if (after) after();
    }
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
  const int s = static_cast<int>(stage);
  std::lock_guard lock(r.mu);
  const int n = r.published[s].load(std::memory_order_relaxed);
  if (n == kPerStage) fail("on_fork: more than {} handler sets for stage {}", kPerStage, s);
  r.handlers[s][n] = handlers;
  r.published[s].store(n + 1, std::memory_order_release);
}

}  // namespace kiln
