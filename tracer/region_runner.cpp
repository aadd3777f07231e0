#include "tracer/region_runner.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "ops/random.h"
#include "runtime/allocator.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/fork_handlers.h"
#include "runtime/logging.h"
#include "runtime/profiler.h"
#include "tracer/dump.h"
#include "tracer/interpreter.h"
#include "tracer/region_cache.h"

namespace kiln::tracer {

namespace {

std::atomic<RegionPlanner*> g_planner{nullptr};

// One background thread plans regions in the order they turned hot. At process exit it stops
// taking jobs and the exit waits for the one running: a job must never run while static objects
// it uses (loggers, the configuration) are being destroyed.
class PlanQueue {
 public:
  static PlanQueue& instance() {
    static PlanQueue* q = [] {
      auto* queue = new PlanQueue();  // never destroyed: the worker is detached
      std::atexit([] { PlanQueue::instance().shut_down(); });
      on_fork(ForkStage::Planning,
              {[] { instance().before_fork(); }, [] { instance().mu_.unlock(); },
               [] { instance().after_fork_in_child(); }});
      return queue;
    }();
    return *q;
  }
  void push(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;  // exiting: the region is never planned
      jobs_.push_back(std::move(job));
      ++pending_;
      start_worker();
    }
    cv_.notify_all();
  }
  void wait_idle() {
    std::unique_lock lock(mu_);
    if (pending_ > 0 && !start_worker())  // no planning thread: this one plans what is queued
      while (!jobs_.empty()) run_first(lock);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }
  std::atomic<bool> refuse_threads{false};  // tests: as if no thread could be started

 private:
  // Under mu_; false when no thread can be started (out of threads): the queued jobs then wait
  // for a wait_idle, which runs them on its own thread, and a later push tries again.
  bool start_worker() {
    if (started_) return true;
    try {
      if (refuse_threads.load())
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
      std::thread([this] { work(); }).detach();
    } catch (const std::system_error& e) {
      if (!std::exchange(warned_, true))
        KILN_WARN(Jit, "no planning thread ({}): regions are planned when compiles are waited for",
                  e.what());
      return false;
    }
    started_ = true;
    return true;
  }
  // fork(): the plan being made finishes first (it holds a region's locks, the kernel cache's,
  // a render workspace's), and the worker takes no next job until the parent goes on, so the
  // child copies no lock held and a queue whose jobs it runs itself: its own worker starts for
  // the jobs that were queued. (Before, a child forked mid-plan hung at exit, waiting for a
  // job that no thread of its own was running.)
  void before_fork() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return running_ == 0; });
    lock.release();  // held across the fork; unlocked after it in the parent, remade in the child
  }
  // The child's jobs wait for its next push or wait_idle to start a worker: a thread started
  // here would be one more in every forked child (and ThreadSanitizer ends a process that
  // starts a thread after a multi-threaded fork).
  void after_fork_in_child() {
    remake_after_fork(mu_);  // the parent's worker waited on these
    remake_after_fork(cv_);
    remake_after_fork(idle_);
    started_ = false;
  }
  void shut_down() {
    std::unique_lock lock(mu_);
    stopping_ = true;
    pending_ -= static_cast<int>(jobs_.size());
    jobs_.clear();
    cv_.notify_all();
    idle_.wait(lock, [&] { return running_ == 0; });
  }
  // Runs the first queued job, mu_ released meanwhile (`lock` holds it before and after).
  void run_first(std::unique_lock<std::mutex>& lock) {
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    job();
    lock.lock();
    --running_;
    --pending_;
    idle_.notify_all();
  }
  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
      if (stopping_) return;
      run_first(lock);
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> jobs_;
  int pending_ = 0;
  bool started_ = false;
  bool warned_ = false;  // that no planning thread could be started (once a process)
  int running_ = 0;      // jobs running: the worker's, or those of a wait_idle without a worker
  bool stopping_ = false;
};

// `region` is shared: a cache clear while this runs must not free it under the job.
void plan_region(const std::shared_ptr<CachedRegion>& region, RegionPlanner* planner,
                 const Graph& graph, const RuntimeScalars& runtime) {
  const int64_t t0 = profiler::now_ns();
  EagerModeGuard eager;
  try {
    std::shared_ptr<RegionPlan> plan = planner->plan(graph, runtime);
    if (!plan) {  // nothing worth compiling: interpreted, silently
      region->planning_failed(runtime);
      return;
    }
    // A scalar promoted while this ran makes the plan stale: the next run plans again.
    if (region->install_plan(std::move(plan), runtime))
      profiler::record_compile(planner->name(), region->id, t0, profiler::now_ns());
  } catch (const std::exception& e) {
    region->planning_failed(runtime);
    KILN_WARN(Jit, "{}: planning a region of {} ops failed; it stays interpreted: {}",
              planner->name(), graph.nodes.size(), e.what());
  } catch (...) {
    region->planning_failed(runtime);
    KILN_WARN(Jit,
              "{}: planning a region of {} ops failed (unknown exception); it stays "
              "interpreted",
              planner->name(), graph.nodes.size());
  }
}

// Plans `region` (synchronously, or queued with KILN_JIT_ASYNC) once it has run `threshold`
// times (`runs_so_far`) without a plan: a threshold of 0 plans before the first run, and a region
// whose plan a scalar promotion dropped is planned again before its next run.
void maybe_plan(CachedRegion* region, int64_t runs_so_far) {
  RegionPlanner* planner = g_planner.load(std::memory_order_acquire);
  if (planner == nullptr) return;
  if (region->plan_state.load(std::memory_order_relaxed) != CachedRegion::PlanState::None) return;
  const int threshold = config().jit_threshold >= 0 ? config().jit_threshold.load()
                                                    : planner->threshold(region->graph);
  if (runs_so_far < threshold) return;
  auto expected = CachedRegion::PlanState::None;
  if (!region->plan_state.compare_exchange_strong(expected, CachedRegion::PlanState::Queued))
    return;
  // A promotion racing with this copy resets the state, and the region is planned again.
  RuntimeScalars runtime = region->runtime_scalars();
  std::shared_ptr<CachedRegion> shared = region->shared_from_this();
  if (config().jit_async) {
    PlanQueue::instance().push(
        [shared, planner, runtime]() { plan_region(shared, planner, shared->graph, runtime); });
  } else {
    plan_region(shared, planner, region->graph, runtime);
  }
}

// The run arguments of `g` for a plan of `region` (backend.h: RunArgs).
struct RunArgsStorage {
  std::vector<Scalar> scalars;
  std::vector<PhiloxWords> random;
  void extract(const CachedRegion& region, const Graph& g) {
    for (const ScalarPosition& p : region.runtime_scalars())
      scalars.push_back(g.nodes[p.node].attrs.scalars[p.index]);
    for (int32_t j : region.random) {
      const Attrs& a = g.nodes[j].attrs;
      random.push_back({philox_seed(a), philox_counter(a)});
    }
  }
};

}  // namespace

std::vector<int32_t> random_nodes(const Graph& g) {
  std::vector<int32_t> out;
  for (size_t j = 0; j < g.nodes.size(); ++j)
    if (op_def(g.nodes[j].op).flags & kIsRandom) out.push_back(static_cast<int32_t>(j));
  return out;
}

void set_planner(RegionPlanner* planner) { g_planner.store(planner, std::memory_order_release); }
RegionPlanner* current_planner() { return g_planner.load(std::memory_order_acquire); }

void wait_for_compiles() { PlanQueue::instance().wait_idle(); }

void refuse_planning_thread_for_testing(bool refuse) {
  PlanQueue::instance().refuse_threads = refuse;
}

void run_in_background(std::function<void()> job) { PlanQueue::instance().push(std::move(job)); }

InterpretResult run_region(const Graph& g, std::span<const Tensor> inputs,
                           std::span<const int32_t> aliasing) {
  return run_cached_region(RegionCache::instance().lookup(g, aliasing), g, inputs);
}

InterpretResult run_cached_region(const CacheLookup& found, const Graph& g,
                                  std::span<const Tensor> inputs,
                                  std::span<const Tensor> destinations) {
  CachedRegion* region = found.region.get();
  const int64_t t0 = profiler::now_ns();
  const CpuPeakScope peak;  // the memory each run holds at once, for KILN_STATS
  const auto nodes = static_cast<int64_t>(g.nodes.size());
  if (region == nullptr) {  // past the recompile limit: interpreted, uncached
    InterpretResult out = interpret(g, plan_interpreter(g), inputs, destinations);
    profiler::record_interpret(0, nodes, peak.peak_bytes(), t0, profiler::now_ns());
    return out;
  }
  if (found.hit) {
    profiler::record_cache_hit(region->id);
  } else {
    profiler::record_cache_miss(region->id);
    if (!config().dump.empty())
      dump_graph(region->graph, fmt::format("region-{:016x}", region->id));
  }
  const int64_t earlier_runs = region->runs.fetch_add(1, std::memory_order_relaxed);
  maybe_plan(region, earlier_runs);  // a threshold of 0: before the first run
  if (region->plan_state.load(std::memory_order_acquire) == CachedRegion::PlanState::Ready) {
    if (std::shared_ptr<RegionPlan> plan = region->jit_plan()) {
      InterpretResult out;
      try {
        RunArgsStorage storage;
        storage.extract(*region, g);
        out = plan->run(RunArgs{inputs, destinations, storage.scalars, storage.random});
      } catch (...) {  // the plan itself failed (not an op): every output fails
        out.error = std::current_exception();
        out.outputs.assign(g.outputs.size(), Tensor());
      }
      out.planned = true;
      profiler::record_plan_run(region->id, nodes, peak.peak_bytes(), t0, profiler::now_ns());
      return out;
    }
  }
  InterpretResult out = interpret(g, region->plan, inputs, destinations);
  const int64_t t1 = profiler::now_ns();
  region->interpret_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
  profiler::record_interpret(region->id, nodes, peak.peak_bytes(), t0, t1);
  maybe_plan(region, earlier_runs + 1);
  return out;
}

}  // namespace kiln::tracer
