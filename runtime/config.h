// Config: every KILN_* environment variable, read once and validated at first use. Code may
// override any field through kiln::config(); the runtime reads the fields when it needs them.
#pragma once
#include <atomic>
#include <string>

#include "runtime/device.h"

namespace kiln {

// A flag that every thread reads on its hot path while a program may flip it at run time
// (config().jit): a relaxed atomic, so the flip is no data race, that still copies and assigns
// like a bool (Config is built and copied by value). Nothing is published through it.
class RunTimeFlag {
 public:
  RunTimeFlag(bool v = false) : v_(v) {}  // NOLINT: converts like the bool it stands for
  RunTimeFlag(const RunTimeFlag& o) : v_(o.load()) {}
  RunTimeFlag& operator=(const RunTimeFlag& o) {
    v_.store(o.load(), std::memory_order_relaxed);
    return *this;
  }
  RunTimeFlag& operator=(bool v) {
    v_.store(v, std::memory_order_relaxed);
    return *this;
  }
  operator bool() const { return load(); }  // NOLINT
  bool load() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> v_;
};

// Fields other than `jit` are plain values: set them before other threads run kiln ops (a test's
// ConfigOverride, a program's start-up), never while they do.
struct Config {
  RunTimeFlag jit = false;      // KILN_JIT: 0 eager, 1 record and compile hot regions
  int jit_threshold = -1;       // KILN_JIT_THRESHOLD: interpreted runs before a region is planned;
                                // -1: the planner's own (the CPU plans at first sight)
  bool jit_async = true;        // KILN_JIT_ASYNC: compile in the background
  int jit_recompile_limit = 8;  // KILN_JIT_RECOMPILE_LIMIT: distinct compiles per region
  int jit_segment_limit = 10000;          // KILN_JIT_SEGMENT_LIMIT: ops recorded before a flush
  bool jit_validate = false;              // KILN_JIT_VALIDATE: check compiled regions against eager
  bool jit_passes = true;                 // KILN_JIT_PASSES: graph passes before planning (docs/jit.md)
  std::string jit_isa;                    // KILN_JIT_ISA: avx512 | avx2 | sse2 (empty: the best)
  Device default_device = Device::cpu();  // KILN_DEVICE: cpu | cuda | cuda:N
  int num_threads = 0;                    // KILN_NUM_THREADS: cap for TBB and BLAS; 0 = all cores
  std::string log = "warn";               // KILN_LOG: e.g. "info,ops=debug"
  std::string cache_dir;                  // KILN_CACHE_DIR: on-disk kernel cache
  std::string dump;                       // KILN_DUMP: folder for graphs, code and asm
  std::string profile;                    // KILN_PROFILE: Chrome trace written at exit
  bool stats = false;                     // KILN_STATS: summary printed at exit
};

// The process-wide configuration (read from the environment on first call).
Config& config();

// Re-reads the environment, validating every variable (used at start-up and by tests).
// Throws kiln::Error naming the variable and the values it accepts.
Config config_from_env();

// Number of worker threads kernels may use (config().num_threads, or the machine's cores).
int num_threads();
void set_num_threads(int n);

}  // namespace kiln
