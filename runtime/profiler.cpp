// Recording side of the profiler: the global state, per-thread buffers, start/stop, the exit
// writer, and the record_* functions. Rendering is in profiler_trace_writer.cpp and
// profiler_stats.cpp.
#include "runtime/profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "runtime/config.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/error.h"
#include "runtime/init.h"
#include "runtime/profiler_buffers.h"

namespace kiln::profiler {

namespace {
// Per event kind: the trace's "cat" field and the label of the stats table (EventKind order).
struct KindNames {
  const char* category;
  const char* label;
};
constexpr KindNames kKindNames[kNumEventKinds] = {{"op", "op"},
                                                  {"flush", "flush"},
                                                  {"cache", "cache hit"},
                                                  {"cache", "cache miss"},
                                                  {"interpret", "interpret"},
                                                  {"fallback", "fallback"},
                                                  {"compile", "compile"},
                                                  {"kernel", "kernel launch"},
                                                  {"kernel", "kernel compile"},
                                                  {"region", "region traced"},
                                                  {"plan", "plan run"},
                                                  {"step", "plan step"}};
}  // namespace

const char* kind_category(EventKind kind) {
  int k = static_cast<int>(kind);
  return k >= 0 && k < kNumEventKinds ? kKindNames[k].category : "unknown";
}

const char* kind_label(EventKind kind) {
  int k = static_cast<int>(kind);
  return k >= 0 && k < kNumEventKinds ? kKindNames[k].label : "unknown";
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace detail {

void ThreadBuffer::clear() {
  events.clear();
  dropped = 0;
  for (Counter& c : ops) c.reset();
  for (Counter& c : kinds) c.reset();
  flush_reasons.clear();
  fallback_reasons.clear();
}

namespace {

struct State {
  std::mutex mu;  // guards everything but the sampling knobs (read per op, without the lock)
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::string trace_path;
  bool stats = false;
  bool started = false;
  bool exit_writer_registered = false;
  int64_t origin_ns = 0;
  std::vector<std::string> op_names;
  std::atomic<int64_t> sample_every{kDefaultOpSampleEvery};
  std::atomic<int64_t> sample_min_ns{kDefaultOpSampleMinNs};
};

// Never destroyed, so that the exit writer and threads still running at exit can use it
// whatever the order of static destruction.
State& state() {
  static State* s = new State;
  return *s;
}

std::shared_ptr<ThreadBuffer> register_buffer() {
  auto buf = std::make_shared<ThreadBuffer>();
  buf->tid = static_cast<int64_t>(::syscall(SYS_gettid));
  State& s = state();
  std::lock_guard lock(s.mu);
  s.buffers.push_back(buf);
  return buf;
}

// The global list keeps a buffer alive after its thread ends, so its records are still written.
ThreadBuffer& local_buffer() {
  thread_local std::shared_ptr<ThreadBuffer> buf = register_buffer();
  return *buf;
}

void push(ThreadBuffer& buf, Event&& e) {
  if (buf.events.size() < kMaxEventsPerThread)
    buf.events.push_back(std::move(e));
  else
    ++buf.dropped;
}

void record(EventKind kind, std::string_view name, std::string_view text, uint64_t region,
            int64_t number, int64_t begin_ns, int64_t end_ns, int64_t bytes = 0) {
  ThreadBuffer& buf = local_buffer();
  std::lock_guard lock(buf.mu);
  buf.kinds[static_cast<int>(kind)].add(end_ns == kInstant ? 0 : end_ns - begin_ns);
  if (kind == EventKind::Flush) ++buf.flush_reasons[std::string(text)];
  if (kind == EventKind::Fallback) ++buf.fallback_reasons[std::string(text)];
  push(buf, Event{kind, begin_ns, end_ns, std::string(name), std::string(text), region, number,
                  OpId::kCount, bytes});
}

void write_outputs(const std::string& trace_path, bool stats) {
  if (trace_path.empty() && !stats) return;
  Snapshot snap = snapshot();
  if (!trace_path.empty()) {
    std::string json = render_trace(snap);
    std::FILE* f = std::fopen(trace_path.c_str(), "w");
    KILN_CHECK(f != nullptr, "profiler: cannot open the trace file '{}' for writing", trace_path);
    size_t written = std::fwrite(json.data(), 1, json.size(), f);
    bool ok = std::fclose(f) == 0 && written == json.size();
    KILN_CHECK(ok, "profiler: could not write the trace file '{}'", trace_path);
  }
  if (stats) {
    std::string text = render_stats(snap);
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }
}

// Runs from std::atexit: after main returns or exit() is called.
void write_at_exit() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: %s\n", e.what());
  }
}

}  // namespace

bool resolve_op_hook() {
  ensure_initialized();  // may start the profiler from KILN_PROFILE / KILN_STATS
  State& s = state();
  std::lock_guard lock(s.mu);  // start() and stop() set both flags under it
  if (!s.started) g_op_hook.store(false, std::memory_order_relaxed);
  return s.started;
}

void record_op(OpId op, int64_t begin_ns, int64_t end_ns) {
  ThreadBuffer& buf = local_buffer();
  const int64_t dur = end_ns - begin_ns;
  State& s = state();
  const int64_t every = s.sample_every.load(std::memory_order_relaxed);
  const int64_t min_ns = s.sample_min_ns.load(std::memory_order_relaxed);
  Counter& c = buf.ops[static_cast<int>(op)];
  const int64_t seq = c.count.load(std::memory_order_relaxed);
  c.add(dur);
  buf.kinds[static_cast<int>(EventKind::Op)].add(dur);
  if (seq % every == 0 || dur >= min_ns) {
    Event e{EventKind::Op, begin_ns, end_ns, {}, {}, 0, seq};
    e.op = op;
    std::lock_guard lock(buf.mu);
    push(buf, std::move(e));
  }
}

Snapshot snapshot() {
  State& s = state();
  Snapshot snap;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    std::lock_guard lock(s.mu);
    buffers = s.buffers;
    snap.origin_ns = s.origin_ns;
    snap.op_names = s.op_names;
  }
  snap.now_ns = now_ns();
  snap.pid = static_cast<int64_t>(::getpid());
  snap.cuda_memory = cuda::device_allocator_stats();
  snap.sample_every = s.sample_every.load();
  snap.sample_min_ns = s.sample_min_ns.load();
  for (const auto& b : buffers) {
    std::lock_guard lock(b->mu);
    Snapshot::Thread th{b->tid, b->events,        b->dropped,         {},
                        {},     b->flush_reasons, b->fallback_reasons};
    bool any = false;
    for (int i = 0; i < kNumOps; ++i) th.ops[i] = b->ops[i].load();
    for (int k = 0; k < kNumEventKinds; ++k) {
      th.kinds[k] = b->kinds[k].load();
      any = any || th.kinds[k].count > 0;
    }
    if (any) snap.threads.push_back(std::move(th));  // else it recorded nothing since start()
  }
  return snap;
}

}  // namespace detail

namespace detail {
namespace {

void start_collecting(const std::string& trace_path, bool stats) {
  State& s = state();
  std::lock_guard lock(s.mu);
  // Forget the buffers of threads that have ended; empty the others.
  std::erase_if(s.buffers, [](const auto& b) { return b.use_count() == 1; });
  for (auto& b : s.buffers) {
    std::lock_guard block(b->mu);
    b->clear();
  }
  s.trace_path = trace_path;
  s.stats = stats;
  s.origin_ns = now_ns();
  // Own copies of the names: the exit writer may run after the dispatcher's statics are gone.
  s.op_names.clear();
  for (int i = 0; i < kNumOps; ++i) s.op_names.emplace_back(op_name(static_cast<OpId>(i)));
  if (!s.exit_writer_registered) {
    std::atexit(write_at_exit);
    s.exit_writer_registered = true;
  }
  s.started = true;
  g_enabled.store(true, std::memory_order_relaxed);
  g_op_hook.store(true, std::memory_order_relaxed);
}

}  // namespace
}  // namespace detail

void start(const std::string& trace_path, bool stats) {
  // kiln::init() first: it may start from KILN_PROFILE / KILN_STATS, and an explicit start wins.
  ensure_initialized();
  detail::start_collecting(trace_path, stats);
}

namespace {
// Reads what to write under the lock (and, for stop, turns collection off), then writes outside
// it. Does nothing when the profiler is not running.
void write_current(bool stop_collecting) {
  using namespace detail;
  State& s = state();
  std::string path;
  bool stats = false;
  {
    std::lock_guard lock(s.mu);
    if (!s.started) return;
    if (stop_collecting) {
      s.started = false;
      g_enabled.store(false, std::memory_order_relaxed);
      g_op_hook.store(false, std::memory_order_relaxed);
    }
    path = s.trace_path;
    stats = s.stats;
  }
  write_outputs(path, stats);
}
}  // namespace

void stop() { write_current(/*stop_collecting=*/true); }

void flush_now() { write_current(/*stop_collecting=*/false); }

void start_from_config() {
  const Config& c = config();
  if (!c.profile.empty() || c.stats) detail::start_collecting(c.profile, c.stats);
}

void set_op_sampling(int64_t every_n, int64_t min_ns) {
  KILN_CHECK(every_n >= 1 && min_ns >= 0,
             "profiler: set_op_sampling({}, {}): expected every_n >= 1 and min_ns >= 0", every_n,
             min_ns);
  detail::state().sample_every.store(every_n);
  detail::state().sample_min_ns.store(min_ns);
}

std::string trace_json() { return detail::render_trace(detail::snapshot()); }
std::string stats_text() { return detail::render_stats(detail::snapshot()); }

void record_flush(std::string_view reason, int64_t begin_ns, int64_t end_ns) {
  if (!enabled()) return;
  detail::record(EventKind::Flush, "flush", reason, 0, 0, begin_ns, end_ns);
}

void record_cache_hit(uint64_t region) {
  if (!enabled()) return;
  const int64_t t = now_ns();
  detail::record(EventKind::CacheHit, "cache hit", {}, region, 0, t, detail::kInstant);
}

void record_cache_miss(uint64_t region) {
  if (!enabled()) return;
  const int64_t t = now_ns();
  detail::record(EventKind::CacheMiss, "cache miss", {}, region, 0, t, detail::kInstant);
}

void record_interpret(uint64_t region, int64_t nodes, int64_t peak_bytes, int64_t begin_ns,
                      int64_t end_ns) {
  if (!enabled()) return;
  detail::record(EventKind::Interpret, "interpret", {}, region, nodes, begin_ns, end_ns,
                 peak_bytes);
}

void record_plan_run(uint64_t region, int64_t nodes, int64_t peak_bytes, int64_t begin_ns,
                     int64_t end_ns) {
  if (!enabled()) return;
  detail::record(EventKind::PlanRun, "plan run", {}, region, nodes, begin_ns, end_ns, peak_bytes);
}

void record_fallback(std::string_view op, std::string_view reason) {
  if (!enabled()) return;
  const int64_t t = now_ns();
  detail::record(EventKind::Fallback, op, reason, 0, 0, t, detail::kInstant);
}

void record_compile(std::string_view tier, uint64_t region, int64_t begin_ns, int64_t end_ns) {
  if (!enabled()) return;
  detail::record(EventKind::Compile, "compile", tier, region, 0, begin_ns, end_ns);
}

void record_kernel_launch(std::string_view kernel, int64_t begin_ns, int64_t end_ns) {
  if (!enabled()) return;
  detail::record(EventKind::KernelLaunch, kernel, {}, 0, 0, begin_ns, end_ns);
}

void record_plan_step(std::string_view kind, std::string_view op, int64_t begin_ns,
                      int64_t end_ns) {
  if (!enabled()) return;
  std::string name;
  name.reserve(kind.size() + 1 + op.size());
  name.append(kind).append(" ").append(op);
  detail::record(EventKind::PlanStep, name, {}, 0, 0, begin_ns, end_ns);
}

void record_kernel_compile(std::string_view kernel, int64_t begin_ns, int64_t end_ns) {
  if (!enabled()) return;
  detail::record(EventKind::KernelCompile, kernel, {}, 0, 0, begin_ns, end_ns);
}

void record_region_trace(std::string_view region_name) {
  if (!enabled()) return;
  const int64_t t = now_ns();
  detail::record(EventKind::RegionTrace, region_name, {}, 0, 0, t, detail::kInstant);
}

}  // namespace kiln::profiler
