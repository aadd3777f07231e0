// The profiler (DESIGN.md, "Runtime"): KILN_PROFILE=trace.json writes a Chrome/Perfetto trace
// (the JSON "traceEvents" format) at exit, KILN_STATS=1 prints a summary table on stderr at exit.
// docs/profiling.md describes both for users.
//
// Cost when off: the dispatcher tests op_hook(), a relaxed load of one global bool, once per op;
// the record_* functions start with a test of enabled(), so callers need no guard of their own.
//
// When on, each thread records into its own buffer (registered once in a global list, merged when
// written), under a per-buffer mutex that only the writer ever contends for. Ops are too frequent
// to keep one event each: every op is counted per (thread, op name) as a count and total time, and
// only sampled ops become trace events (the first and then every Nth of each op name on each
// thread, plus every op slower than a threshold; set_op_sampling()). Every other kind of event is
// rare (per region, not per op) and is always kept, up to kMaxEventsPerThread per thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "runtime/op_list.h"

namespace kiln::profiler {

// Event kinds, one per thing the runtime reports. A new kind needs: an entry here, its category
// and display names in profiler.cpp (kind_category/kind_label), and a record_* function.
enum class EventKind : uint8_t {
  Op,             // one dispatched op (meta + mode/eager + autograd recording), complete event
  Flush,          // the recorder flushed a segment; args.reason says why
  CacheHit,       // the region cache found a graph; instant event with args.region
  CacheMiss,      // the region cache did not; instant event with args.region
  Interpret,      // a cold region ran node by node with eager kernels; args.region, args.nodes,
                  // args.peak_bytes (CPU bytes it held at once above what it started with)
  Fallback,       // a higher-order op fell back to eager; args.reason
  Compile,        // a region was compiled; args.tier, args.region
  KernelLaunch,   // a compiled kernel ran; complete event named after the kernel
  KernelCompile,  // a kernel target made machine code; complete event named after the kernel
  RegionTrace,    // region(name, fn) traced a body it had not seen; instant event named after it
  PlanRun,        // a region ran its plan (jit/); args.region, args.nodes, args.peak_bytes
  PlanStep,       // one of a plan's BLAS or eager steps; complete event named "blas matmul",
                  // "eager softmax", ... (its kernel steps are KernelLaunch events)
  kCount
};
inline constexpr int kNumEventKinds = static_cast<int>(EventKind::kCount);
// The trace's "cat" field of each kind ("op", "flush", "cache", ...).
const char* kind_category(EventKind kind);
// The kind's row in the stats table ("op", "flush", "cache hit", ...).
const char* kind_label(EventKind kind);

namespace detail {
inline std::atomic<bool> g_enabled{false};
// Starts true so that the first op, which runs kiln::init() (and so start_from_config()), is
// timed too; resolve_op_hook() then clears it unless the profiler was started.
inline std::atomic<bool> g_op_hook{true};
bool resolve_op_hook();
void record_op(OpId op, int64_t begin_ns, int64_t end_ns);
}  // namespace detail

// True while a trace or stats are being collected.
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }
// The dispatcher's switch, its only check per op: true while collecting (and before the first op).
inline bool op_hook() { return detail::g_op_hook.load(std::memory_order_relaxed); }

// steady_clock in nanoseconds (trace timestamps are microseconds since start(), 3 decimals).
int64_t now_ns();

// Starts collecting, dropping anything collected before. `trace_path` (may be empty) is where
// stop() and flush_now() write the trace; `stats` makes them print the summary on stderr too.
// KILN_PROFILE / KILN_STATS call this from kiln::init() and write at exit, also when the
// program returns from main or calls exit().
void start(const std::string& trace_path, bool stats = false);
// Writes the outputs (as flush_now) and stops collecting. Does nothing when not started.
void stop();
// Writes the trace file and/or the stats with what was collected so far, and keeps collecting.
// Throws kiln::Error when the trace file cannot be written.
void flush_now();
// Starts from the configuration (kiln::config().profile / .stats); called by kiln::init() (so
// it must not be called from code that init() runs; start() may be).
void start_from_config();

// Op sampling for trace events (counters always see every op): the first op of each name on each
// thread and then every `every_n`-th one becomes an event (every_n = 1: all of them), and so does
// any op that took at least `min_ns`. Defaults: every 100th, and ops of 50 µs or more.
void set_op_sampling(int64_t every_n, int64_t min_ns);
inline constexpr int64_t kDefaultOpSampleEvery = 100;
inline constexpr int64_t kDefaultOpSampleMinNs = 50'000;
inline constexpr size_t kMaxEventsPerThread = 1'000'000;

// The collected data, rendered (what flush_now writes).
std::string trace_json();
std::string stats_text();

// Runs f() as the op `op` and records it. Used by the dispatcher behind `if (op_hook())`.
// An op that throws is not recorded (its error is the user's report).
template <class F>
decltype(auto) time_op(OpId op, F&& f) {
  if (!enabled()) [[unlikely]] {
    if (!detail::resolve_op_hook()) return f();
  }
  const int64_t begin = now_ns();
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    detail::record_op(op, begin, now_ns());
  } else {
    decltype(auto) out = f();
    detail::record_op(op, begin, now_ns());
    return out;
  }
}

// One recording function per kind. Times are now_ns() values; each is a no-op when disabled.
// `region` identifies a region (its graph hash) so that events of one region can be matched.
void record_flush(std::string_view reason, int64_t begin_ns, int64_t end_ns);
void record_cache_hit(uint64_t region);
void record_cache_miss(uint64_t region);
// peak_bytes: the most CPU memory the run allocated and held at once (CpuPeakScope).
void record_interpret(uint64_t region, int64_t nodes, int64_t peak_bytes, int64_t begin_ns,
                      int64_t end_ns);
void record_plan_run(uint64_t region, int64_t nodes, int64_t peak_bytes, int64_t begin_ns,
                     int64_t end_ns);
void record_fallback(std::string_view op, std::string_view reason);
void record_compile(std::string_view tier, uint64_t region, int64_t begin_ns, int64_t end_ns);
void record_kernel_launch(std::string_view kernel, int64_t begin_ns, int64_t end_ns);
// A plan's BLAS or eager step ran (jit/plan/jit_plan.cpp): `kind` "blas" or "eager", `op` its
// node's op. Callers time it only when enabled().
void record_plan_step(std::string_view kind, std::string_view op, int64_t begin_ns, int64_t end_ns);
void record_kernel_compile(std::string_view kernel, int64_t begin_ns, int64_t end_ns);
void record_region_trace(std::string_view region_name);

}  // namespace kiln::profiler
