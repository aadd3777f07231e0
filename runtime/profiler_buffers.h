// The profiler's collected data, shared by profiler.cpp (recording), profiler_trace_writer.cpp
// and profiler_stats.cpp (rendering). Not part of the public profiler interface.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/profiler.h"

namespace kiln::profiler::detail {

inline constexpr int64_t kInstant = -1;  // Event::end_ns of an instant event

struct Event {
  EventKind kind;
  int64_t begin_ns;
  int64_t end_ns;    // kInstant for instant events
  std::string name;  // display name (op name, kernel name, "flush", ...)
  std::string text;  // reason (Flush, Fallback) or tier (Compile)
  uint64_t region = 0;
  int64_t number = 0;      // Op: the op's sequence number (per name, per thread); Interpret: nodes
  OpId op = OpId::kCount;  // Op only (its name is looked up when written)
  int64_t bytes = 0;       // Interpret, PlanRun: the run's peak CPU bytes
};

struct Totals {
  int64_t count = 0;
  int64_t ns = 0;
  void add(int64_t dur) {
    ++count;
    ns += dur;
  }
};

// A Totals that the writer can read while its one owning thread updates it, without a lock:
// relaxed load + store (no read-modify-write), so counting an op costs two plain adds.
struct Counter {
  std::atomic<int64_t> count{0};
  std::atomic<int64_t> ns{0};
  void add(int64_t dur) {  // owning thread only
    count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    ns.store(ns.load(std::memory_order_relaxed) + dur, std::memory_order_relaxed);
  }
  Totals load() const {
    return {count.load(std::memory_order_relaxed), ns.load(std::memory_order_relaxed)};
  }
  void reset() {
    count.store(0, std::memory_order_relaxed);
    ns.store(0, std::memory_order_relaxed);
  }
};

// One thread's records. Counters are lock-free (see Counter); everything else is appended by the
// owning thread under `mu`, which the writer locks to read. The mutex is only taken for events
// (sampled ops, and the rare other kinds), so the common op pays no lock.
struct ThreadBuffer {
  std::mutex mu;
  int64_t tid = 0;  // the OS thread id
  std::vector<Event> events;
  int64_t dropped = 0;               // events past kMaxEventsPerThread
  std::array<Counter, kNumOps> ops;  // every op, sampled or not
  std::array<Counter, kNumEventKinds> kinds;
  std::map<std::string, int64_t, std::less<>> flush_reasons;
  std::map<std::string, int64_t, std::less<>> fallback_reasons;

  void clear();
};

// Everything the writers need, copied out of the live buffers (so that rendering holds no lock).
struct Snapshot {
  int64_t origin_ns = 0;  // start() time: trace timestamps are relative to it
  int64_t now_ns = 0;
  int64_t pid = 0;
  std::vector<std::string> op_names;  // indexed by OpId
  int64_t sample_every = 0, sample_min_ns = 0;
  struct Thread {
    int64_t tid;
    std::vector<Event> events;
    int64_t dropped;
    std::array<Totals, kNumOps> ops;
    std::array<Totals, kNumEventKinds> kinds;
    std::map<std::string, int64_t, std::less<>> flush_reasons;
    std::map<std::string, int64_t, std::less<>> fallback_reasons;
  };
  std::vector<Thread> threads;
  cuda::DeviceAllocatorStats cuda_memory;  // summed over the CUDA devices in use
};
Snapshot snapshot();

std::string render_trace(const Snapshot& s);
std::string render_stats(const Snapshot& s);

}  // namespace kiln::profiler::detail
