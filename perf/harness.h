// kiln-perf's harness: command-line options, the timing runner and the reports (table, JSON).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perf/workload.h"

namespace kiln::perf {

// Exit codes: 0 success, 1 a workload failed (error or wrong result), 2 bad or unavailable request.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// A request kiln-perf cannot serve (unknown flag, unavailable mode, device or workload): main()
// prints the message and exits with kExitUsage.
struct UsageError {
  std::string message;
};

struct Options {
  std::vector<std::string> workloads;  // empty: every available workload
  std::vector<std::string> modes = {"eager"};
  std::vector<std::string> devices = {"cpu"};
  int reps = 10;
  int warmup = 2;
  Size size = Size::Default;
  std::string json;  // path, empty: no JSON
  bool list = false;
  bool help = false;
};

// --devices names: "cpu", "cuda" (device 0) or "cuda:N".
bool is_cuda_device(const std::string& name);
Device perf_device(const std::string& name);  // throws UsageError for a malformed name

// Parses argv; throws UsageError. Validates names but not availability (see plan()).
Options parse_options(int argc, char** argv);
std::string usage_text();
std::string list_text();

// One measured figure (one JSON object of "results").
struct Figure {
  std::string workload, mode, device, shape;
  // The workload's parameter and its value for this figure (compile_layers: "layers", N);
  // param_name empty for the others. The JSON writes it as one more key.
  std::string param_name;
  std::optional<int64_t> param;
  int reps = 0, warmup = 0, threads = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0, first_call_ms = 0;
  std::optional<double> gbps;           // bytes per run / median time
  std::optional<double> copy_fraction;  // gbps / ceiling_gbps
  // The same run's ceiling on this device (attach_ceilings): the better of the streaming copy and
  // the best copy_ figure of any mode; null without GB/s.
  std::optional<double> ceiling_gbps;
  // The ceiling figure only: the streaming copy's own GB/s, and which copy the ceiling is
  // ("stream", or "copy_ <mode>" when copy_ was faster: the figure then holds that copy's times).
  std::optional<double> stream_gbps;
  std::string ceiling_from;
  std::optional<double> us_per_op;  // per-op workloads (dispatch)
  // The same run's eager median over this figure's median (above 1: faster than eager); null
  // for eager itself or without an eager figure of the workload.
  std::optional<double> speedup_vs_eager;
  // Region-cache lookups over the first call, warm-up and timed runs, in modes that record
  // (interp, jit); null otherwise. Uncached: interpreted without a region (recompile limit).
  std::optional<int64_t> region_hits, region_misses, region_uncached;
  // jit mode (null otherwise): the CPU JIT kernels rendered during the job (first call, warm-up
  // and timed runs; each job starts with no kernel of an earlier job, in memory or on disk, so
  // its first call renders what it needs), the median, worst and total time per kernel, and
  // kernel launches per timed run.
  std::optional<int64_t> kernels_compiled;
  std::optional<double> compile_us_median, compile_us_max, compile_us_total;
  // jit mode: the kernels given baseline code at first sight (jit/cpu/baseline_kernel.h; their
  // renderings follow on the planning thread, counted above), and the median and worst time to
  // make it: how long a first call waits for a kernel it can launch.
  std::optional<int64_t> baselines;
  std::optional<double> baseline_us_median, baseline_us_max;
  std::optional<double> launches_per_run;
  // jit mode on the CPU with the disk cache on (null otherwise): the first call of a fresh case
  // after the process forgot its plans and kernels, which the CPU kernel disk cache then holds
  // (as a program's second run finds them), and the kernels it loaded from there.
  std::optional<double> disk_first_call_ms;
  std::optional<int64_t> kernels_loaded;
  bool implicit = false;  // copy or ceiling added only as the copy_fraction reference
  // Mode libtorch: the thread count libtorch ran with (at::set_num_threads and OpenBLAS's);
  // kiln-perf runs each peer at 1 and at kiln's thread count. JSON "libtorch_threads", null
  // for the other modes.
  std::optional<int> libtorch_threads;
};

struct Job {
  const Workload* workload;
  std::string mode, device;
  bool implicit = false;
  std::optional<int64_t> param{};  // the value of workload->param_name, for a parametrized workload
  int peer_threads = 0;            // mode libtorch: its thread count
};

// The jobs to run, in order; throws UsageError for unavailable modes, devices and workloads.
// Mode libtorch gives two jobs per workload, libtorch at 1 thread and at num_threads() (one
// when that is 1).
// Adds copy and ceiling (flagged implicit) when a GB/s workload is selected without them (ceiling
// runs once per device, in its fixed mode "native"). A summary workload
// (compile_latency) gets no jobs: selected alone, it selects every available workload.
std::vector<Job> plan(const Options& o);
// Whether the run prints the compile_latency summary (selected, or every workload selected).
bool wants_latency_summary(const Options& o);

// Runs one job: a first call (timed apart and checked), warm-up, then o.reps timed runs.
Figure measure(const Job& job, const Options& o, int index, int total);

// Makes each device's ceiling figure the better of its streaming copy and the best copy_ figure
// (any mode) of the device, then fills ceiling_gbps and copy_fraction (gbps / ceiling) of every
// GB/s figure of the device.
void attach_ceilings(std::vector<Figure>& figures);
// Fills speedup_vs_eager from the eager figures of the same workload, parameter and device.
void attach_speedups(std::vector<Figure>& figures);

std::string table_text(const std::vector<Figure>& figures);
// The jit figures' first call, steady state and kernel compile times; empty without jit figures.
std::string jit_text(const std::vector<Figure>& figures);
// compile_latency (perf/report.cpp): each figure's first call next to its steady-state
// median, modes side by side, as a table and as the JSON object written under "compile_latency".
std::string latency_text(const std::vector<Figure>& figures);
std::string latency_json(const std::vector<Figure>& figures);
// latency_json: the "compile_latency" object's text, or empty for no such key.
// Throws UsageError unless `path` can be opened for writing (checked before anything runs, so
// that a typo does not cost a whole run); the file is left empty until write_json.
void check_json_path(const std::string& path);
void write_json(const std::string& path, const std::vector<Figure>& figures, const Options& o,
                const std::string& latency_json);

}  // namespace kiln::perf
