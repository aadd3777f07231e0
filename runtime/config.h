// Config: every KILN_* environment variable, read once and validated at first use. Code may
// override any field through kiln::config(); the runtime reads the fields when it needs them.
// The bool and int fields are Relaxed (runtime/relaxed.h): any thread may set them while other
// threads run ops (e.g. config().jit = false switches recording off at each thread's next op).
// The string and Device fields are plain: set them before other threads use kiln.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/device.h"
#include "runtime/relaxed.h"

namespace kiln {

// KILN_JIT_BASELINE: how a new CPU pointwise kernel runs while its own rendering is made
// (jit/cpu/baseline_kernel.h): Off renders it before its first launch; On launches baseline code
// made of op kernels at once and renders the kernel on the planning thread, swapping it in when
// ready; Only never renders it (tests and measurements of the baseline code).
enum class BaselineTier : uint8_t { Off, On, Only };

struct Config {
  Relaxed<bool> jit = false;        // KILN_JIT: 0 eager, 1 record and compile hot regions
  Relaxed<int> jit_threshold = -1;  // KILN_JIT_THRESHOLD: interpreted runs before a region is
                                    // planned; -1: the planner's own (the CPU plans at first sight)
  Relaxed<bool> jit_async = true;   // KILN_JIT_ASYNC: compile in the background
  Relaxed<int> jit_recompile_limit = 8;    // KILN_JIT_RECOMPILE_LIMIT: distinct compiles per region
  Relaxed<int> jit_segment_limit = 10000;  // KILN_JIT_SEGMENT_LIMIT: ops recorded before a flush
  Relaxed<bool> jit_validate = false;  // KILN_JIT_VALIDATE: check compiled regions against eager
  Relaxed<bool> jit_passes = true;  // KILN_JIT_PASSES: graph passes before planning (docs/jit.md)
  Relaxed<bool> jit_batch_products = true;  // KILN_JIT_BATCH_PRODUCTS: products of row slices
                                            // as one GEMM (jit/plan/product_batch.h)
  std::string jit_isa;                      // KILN_JIT_ISA: avx512 | avx2 | sse2 (empty: the best)
  Relaxed<int> jit_unroll = 0;              // KILN_JIT_UNROLL: vectors per loop iteration; 0: auto
  Relaxed<bool> jit_warm_up =
      true;  // KILN_JIT_WARMUP: warm the CPU renderer up (jit/cpu/warm_up.h)
  Relaxed<bool> jit_eager_tier = true;  // KILN_JIT_EAGER_TIER: small ops between frequent syncs
                                        // run eagerly (tracer/eager_tier.h)
  Relaxed<BaselineTier> jit_baseline = BaselineTier::On;  // KILN_JIT_BASELINE: off | on | only
  Relaxed<bool> jit_assembler = true;   // KILN_JIT_ASSEMBLER: CPU kernels' fast path (docs/jit.md)
  Relaxed<bool> jit_disk_cache = true;  // KILN_JIT_DISK_CACHE: CPU kernels kept in KILN_CACHE_DIR
                                        // across processes (jit/cpu/disk_cache.h)
  std::string jit_streaming = "auto";   // KILN_JIT_STREAMING: auto | on | off: non-temporal stores
                                        // for large outputs of CPU JIT kernels and eager pointwise
                                        // ops (ops/cpu/store_choice.h)
  std::string gemm = "auto";  // KILN_GEMM: auto (float32 products on libxsmm where it generates
                              // code, else OpenBLAS) | openblas (ops/cpu/xsmm_gemm.h)
  Device default_device = Device::cpu();  // KILN_DEVICE: cpu | cuda | cuda:N
  Relaxed<int> num_threads = 0;           // KILN_NUM_THREADS: cap for TBB and BLAS; 0 = all cores
  Relaxed<bool> huge_pages = true;        // KILN_HUGE_PAGES: big CPU blocks on 2 MiB pages
  // KILN_GATHER_BLOCK_MIN_KIB: the smallest gathered copy (KiB) that a reduction over scattered
  // dims, eager or CPU JIT, gathers and reduces per block of rows instead of whole (0: every
  // one with a block per thread; ops/cpu/reduce_plan.h, jit/plan/gathered_step.h)
  Relaxed<int> gather_block_min_kib = 4096;
  std::string log = "warn";     // KILN_LOG: e.g. "info,ops=debug"
  std::string cache_dir;        // KILN_CACHE_DIR: on-disk kernel cache
  std::string dump;             // KILN_DUMP: folder for graphs, code and asm
  std::string profile;          // KILN_PROFILE: Chrome trace written at exit
  Relaxed<bool> stats = false;  // KILN_STATS: summary printed at exit
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
