// StoreChoice: whether a CPU kernel's large element outputs take non-temporal (streaming) stores
// or ordinary ones, decided per kernel by measuring its own launches: each JIT kernel
// (jit/cpu/cpu_kernel.h) and each eager pointwise loop, per op and compute dtype
// (ops/pointwise.cpp, eager_store_choice).
//
// Why measured: which one is faster depends on the machine and on the kernel, not on a rule
// written down once. On the 2-core Zen 5 VM of docs/performance.md (2026-11-27), streaming
// stores made copy-like kernels (x + 1, x * w, a degree-5 polynomial) and exp 6-34% faster, and
// tanh, sin, the erf gelu and gelu out of primitives 5-17% slower; sigmoid was even. On the
// Zen 4 machine before it, streaming won for gelu too (jit-codegen.md: ~35% more bytes/s).
//
// Contract (KILN_JIT_STREAMING, config().jit_streaming):
// - "on": every eligible launch streams (the choice before this class); "off": none does.
// - "auto" (the default): the first eligible launch streams, untimed (its output pages and code
//   are cold); the next 2 * kTrials alternate ordinary and streaming stores, timed per element;
//   then the kernel keeps the one with the lower best time (a tie keeps streaming) for the rest
//   of the process. While one timed launch runs, a concurrent launch of the same kernel takes
//   the current default untimed, so that two launches never time each other.
// - Both choices store the same bits: the choice changes speed only, never results.
// "Eligible" is the launch's business (cpu_kernel.cpp, cpu_kernel_reduce.cpp): every element output
// large (kStreamingBytes), contiguous and vector-aligned. A JIT launch that is one block of a
// larger one (LaunchArgs::whole_elements) is judged by the whole's size and never timed
// (CpuKernel::pick_part_stores).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/logging.h"

namespace kiln {

class StoreChoice {
 public:
  enum class Mode { Auto, On, Off };
  static constexpr int kTrials = 2;  // timed launches of each kind before the choice

  // KILN_JIT_STREAMING's value ("auto", "on", "off"; config.cpp validates it).
  static Mode mode_from(const std::string& s);

  // What the next eligible launch does: `streaming`, and whether to time it (`timed`: call
  // record() with the outcome, or abandon() if the launch throws).
  struct Pick {
    bool streaming;
    bool timed;
  };
  Pick next(Mode mode);
  // Returns true when this record made the decision.
  bool record(bool streaming, int64_t elements, int64_t ns);
  void abandon();

  // The decision, once made: 1 streaming, 0 ordinary stores, -1 still measuring.
  int decided() const;
  // The best measured ns per element of each kind (streaming: [1]); infinity before a trial.
  double best_ns_per_element(bool streaming) const;
  // Launches that streamed (the picks of next() with streaming set), and a fresh start (tests).
  int64_t streamed() const;
  void reset();

 private:
  Pick pick(Mode mode);  // next()'s choice, under the lock
  mutable std::mutex mu_;
  int eligible_ = 0;         // eligible launches seen in Auto mode
  int trials_[2] = {0, 0};   // timed launches recorded, [streaming]
  double best_[2] = {0, 0};  // their best ns per element (valid where trials_ > 0)
  bool in_flight_ = false;   // a timed launch is running
  int decided_ = -1;
  int64_t streamed_ = 0;
};

// One launch under a StoreChoice pick: times it when the pick asks, recording the time when the
// scope ends normally and abandoning the trial when it unwinds. The decision is logged at debug
// level to `sub` (KILN_LOG=jit=debug, ops=debug) with the kernel's or op's name.
// An untimed pick costs one branch (eager pointwise ops make one per call): the clock and the
// exception count are read only for a trial.
class StoreTrial {
 public:
  StoreTrial(StoreChoice* choice, StoreChoice::Pick pick, int64_t elements, std::string_view name,
             logging::Subsystem sub)
      : choice_(choice), pick_(pick), elements_(elements), name_(name), sub_(sub) {
    if (pick_.timed) start();
  }
  ~StoreTrial() {
    if (pick_.timed) finish();
  }
  StoreTrial(const StoreTrial&) = delete;
  StoreTrial& operator=(const StoreTrial&) = delete;

 private:
  void start();
  void finish();
  StoreChoice* choice_;  // non-null where pick_.timed
  StoreChoice::Pick pick_;
  int64_t elements_;
  std::string_view name_;
  logging::Subsystem sub_;
  int64_t t0_ = 0;
  int uncaught_ = 0;
};

}  // namespace kiln
