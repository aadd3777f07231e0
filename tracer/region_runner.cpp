#include "tracer/region_runner.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/profiler.h"
#include "tracer/dump.h"
#include "tracer/interpreter.h"
#include "tracer/region_cache.h"

namespace kiln::tracer {

namespace {

std::atomic<Backend*> g_backend{nullptr};

// One background thread compiles regions in the order they turned hot.
class CompileQueue {
 public:
  static CompileQueue& instance() {
    static CompileQueue* q = new CompileQueue();  // never destroyed: the worker is detached
    return *q;
  }
  void push(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
      ++pending_;
      if (!started_) {
        started_ = true;
        std::thread([this] { work(); }).detach();
      }
    }
    cv_.notify_all();
  }
  void wait_idle() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
      {
        std::lock_guard lock(mu_);
        --pending_;
      }
      idle_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> jobs_;
  int pending_ = 0;
  bool started_ = false;
};

void compile_region(Region* region, Backend* backend, Graph graph, RuntimeScalars runtime) {
  const int64_t t0 = profiler::now_ns();
  EagerModeGuard eager;
  try {
    std::shared_ptr<CompiledRegion> plan = backend->compile(graph, runtime);
    if (!plan) throw Error("the backend returned no plan");
    // A scalar promoted while this compiled makes the plan stale: the next run compiles again.
    if (region->install_compiled(std::move(plan), runtime))
      profiler::record_compile(backend->name(), region->id, t0, profiler::now_ns());
  } catch (const std::exception& e) {
    region->compile_state.store(Region::CompileState::Failed);
    KILN_WARN(Jit, "{}: compiling a region of {} ops failed; it stays interpreted: {}",
              backend->name(), graph.nodes.size(), e.what());
  } catch (...) {
    region->compile_state.store(Region::CompileState::Failed);
    KILN_WARN(Jit,
              "{}: compiling a region of {} ops failed (unknown exception); it stays "
              "interpreted",
              backend->name(), graph.nodes.size());
  }
}

void maybe_compile(Region* region) {
  Backend* backend = g_backend.load(std::memory_order_acquire);
  if (backend == nullptr) return;
  if (region->runs.load(std::memory_order_relaxed) < config().jit_threshold) return;
  auto expected = Region::CompileState::None;
  if (!region->compile_state.compare_exchange_strong(expected, Region::CompileState::Queued))
    return;
  if (!backend->accepts(region->graph)) {
    region->compile_state.store(Region::CompileState::Failed);
    return;
  }
  // A promotion racing with this copy resets the state, and the region is compiled again.
  RuntimeScalars runtime = region->runtime_scalars();
  if (config().jit_async) {
    Graph g = region->graph;
    CompileQueue::instance().push([region, backend, g = std::move(g), runtime]() mutable {
      compile_region(region, backend, std::move(g), std::move(runtime));
    });
  } else {
    compile_region(region, backend, region->graph, std::move(runtime));
  }
}

}  // namespace

void set_backend(Backend* backend) { g_backend.store(backend, std::memory_order_release); }
Backend* current_backend() { return g_backend.load(std::memory_order_acquire); }

void wait_for_compiles() { CompileQueue::instance().wait_idle(); }

InterpretResult run_region(const Graph& g, std::span<const Tensor> inputs,
                           std::span<const int32_t> aliasing) {
  return run_cached_region(RegionCache::instance().lookup(g, aliasing), g, inputs);
}

InterpretResult run_cached_region(const CacheLookup& found, const Graph& g,
                                  std::span<const Tensor> inputs,
                                  std::span<const Tensor> destinations) {
  Region* region = found.region;
  const int64_t t0 = profiler::now_ns();
  if (region == nullptr) {  // past the recompile limit: interpreted, uncached
    InterpretResult out = interpret(g, plan_interpreter(g), inputs, destinations);
    profiler::record_interpret(0, static_cast<int64_t>(g.nodes.size()), t0, profiler::now_ns());
    return out;
  }
  if (found.hit) {
    profiler::record_cache_hit(region->id);
  } else {
    profiler::record_cache_miss(region->id);
    if (!config().dump.empty())
      dump_graph(region->graph, fmt::format("region-{:016x}", region->id));
  }
  region->runs.fetch_add(1, std::memory_order_relaxed);
  if (region->compile_state.load(std::memory_order_acquire) == Region::CompileState::Ready) {
    if (std::shared_ptr<CompiledRegion> plan = region->compiled()) {
      InterpretResult out;
      try {
        out.outputs = plan->run(g, inputs);
      } catch (...) {
        out.error = std::current_exception();
        out.outputs.assign(g.outputs.size(), Tensor());
      }
      return out;
    }
  }
  InterpretResult out = interpret(g, region->plan, inputs, destinations);
  const int64_t t1 = profiler::now_ns();
  region->interpret_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
  profiler::record_interpret(region->id, static_cast<int64_t>(g.nodes.size()), t0, t1);
  maybe_compile(region);
  return out;
}

}  // namespace kiln::tracer
