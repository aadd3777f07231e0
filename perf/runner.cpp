// Times one job: the first call on a fresh Case (timed apart: it includes one-time costs such as
// page faults, recording a region for the first time, and in jit mode planning the region and
// compiling its kernels, synchronously: perf/mode_scope.h), a check of its result, warm-up runs,
// then the timed repetitions. Every run ends with kiln::sync(), so that in interp mode the figure
// holds recording + flush + interpretation and in jit mode recording + flush + the compiled plan
// (in eager mode the sync has nothing to do, and all modes are timed alike).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "jit/cpu/cpu_target.h"
#include "jit/cpu/disk_cache.h"
#include "jit/loop/disk_cache_writer.h"
#include "perf/harness.h"
#include "perf/mode_scope.h"
#include "perf/peers/peer.h"
#include "tracer/region_runner.h"

namespace kiln::perf {

namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// One run, synced, with the region-cache lookups it caused added to `tally` (outside the timing).
double timed_run(Case& c, RegionTally& tally) {
  tally.begin();
  double t0 = now_ms();
  c.run();
  sync();
  double t = now_ms() - t0;
  tally.end();
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Progress on stderr: one line rewritten in place on a terminal, start/end lines otherwise.
class Progress {
 public:
  Progress(const Job& job, int index, int total)
      : tty_(isatty(STDERR_FILENO)),
        head_(fmt::format(
            "kiln-perf [{}/{}] {} {}{} {}", index, total, job.workload->name, job.mode,
            job.peer_threads ? fmt::format(" ({} threads)", job.peer_threads) : "", job.device)) {
    if (!tty_) fmt::print(stderr, "{} ...\n", head_);
  }
  void step(const char* what, int i, int n) {
    if (tty_) fmt::print(stderr, "\r\033[K{}: {} {}/{}", head_, what, i, n);
  }
  void done(const Figure& f) {
    std::string regions =
        f.region_hits ? fmt::format(", regions hit/miss {}/{}", *f.region_hits, *f.region_misses)
                      : "";
    fmt::print(stderr, "{}{}: median {:.3f} ms (first call {:.3f} ms{})\n", tty_ ? "\r\033[K" : "",
               head_, f.median_ms, f.first_call_ms, regions);
  }

 private:
  bool tty_;
  std::string head_;
};

// A libtorch peer as a Case. Its check() raises std::runtime_error, which main() reports as a
// failed workload (exit 1), as it does kiln::Error.
class PeerAdapter : public Case {
 public:
  explicit PeerAdapter(std::unique_ptr<peer::PeerCase> c) : c_(std::move(c)) {}
  void run() override { c_->run(); }
  void check() const override { c_->check(); }

 private:
  std::unique_ptr<peer::PeerCase> c_;
};

Prepared prepare(const Job& job, Size size) {
  if (job.mode != "libtorch") {
    const Device d = perf_device(job.device);
    return job.param ? job.workload->prepare_at(size, d, *job.param)
                     : job.workload->prepare(size, d);
  }
  // Same sizes as kiln; the job's thread count (1 or kiln's).
  peer::PeerPrepared pp =
      peer::libtorch_prepare(job.workload->name, size == Size::Small, job.peer_threads);
  Prepared p;
  p.c = std::make_unique<PeerAdapter>(std::move(pp.c));
  p.shape = pp.shape;
  p.bytes = pp.bytes;
  p.ops = pp.ops;
  return p;
}

// The first call of a fresh case in a process that forgot every plan and kernel: its kernels
// come from the disk cache (the job's own folder: perf/run_disk_cache.h), as in a program's
// second run.
// Kernels that cannot be stored (disk_cache.h) are rendered again.
void time_disk_first_call(const Job& job, const Options& o, Figure& f, Progress& progress) {
  progress.step("first call, warm disk cache", 0, 1);
  tracer::wait_for_compiles();
  jit::flush_disk_cache_writes();  // read from the files, as a program's second run would
  tracer::RegionCache::instance().clear();
  jit::forget_cpu_kernels();
  const bool jit_on = config().jit;
  config().jit = false;  // inputs made eagerly, as for the job's own case
  Prepared fresh = prepare(job, o.size);
  config().jit = jit_on;
  const int64_t loads = jit::cpu_jit_counters().disk_loads.load();
  RegionTally ignored;
  f.disk_first_call_ms = timed_run(*fresh.c, ignored);
  tracer::wait_for_compiles();
  f.kernels_loaded = jit::cpu_jit_counters().disk_loads.load() - loads;
  fresh.c->check();
}

}  // namespace

Figure measure(const Job& job, const Options& o, int index, int total) {
  Progress progress(job, index, total);
  progress.step("preparing", 0, 1);
  // Inputs are made eagerly: in interp mode they are materialized inputs of the recorded regions,
  // as a program's weights and data would be.
  config().jit = false;
  Prepared p = prepare(job, o.size);

  Figure f;
  f.workload = job.workload->name;
  f.mode = job.mode;
  f.device = job.device;
  f.shape = p.shape;
  f.param_name = job.workload->param_name;
  f.param = job.param;
  f.reps = o.reps;
  f.warmup = o.warmup;
  f.threads = num_threads();
  f.implicit = job.implicit;
  if (job.mode == "libtorch") f.libtorch_threads = job.peer_threads;

  // The mode holds for the runs and for check(), which reads the outputs through sync points.
  ModeScope mode(job.mode);
  RegionTally tally;
  JitTally jit;
  jit.begin();
  progress.step("first call", 0, 1);
  f.first_call_ms = timed_run(*p.c, tally);
  // Planning is synchronous in jit mode (ModeScope); wait anyway, so that no plan or kernel is
  // still being made when the timed runs start, whatever the configuration.
  tracer::wait_for_compiles();
  p.c->check();
  for (int i = 0; i < o.warmup; ++i) {
    progress.step("warm-up", i + 1, o.warmup);
    timed_run(*p.c, tally);
  }
  tracer::wait_for_compiles();
  jit.end();
  JitTally timed_jit;
  timed_jit.begin();
  std::vector<double> times;
  for (int i = 0; i < o.reps; ++i) {
    progress.step("rep", i + 1, o.reps);
    times.push_back(timed_run(*p.c, tally));
  }
  timed_jit.end();
  if (mode.records()) {
    f.region_hits = tally.hits;
    f.region_misses = tally.misses;
    f.region_uncached = tally.uncached;
  }
  if (mode.compiles()) {
    std::vector<int64_t> ns = jit.compile_ns;
    ns.insert(ns.end(), timed_jit.compile_ns.begin(), timed_jit.compile_ns.end());
    f.kernels_compiled = static_cast<int64_t>(ns.size());
    f.launches_per_run = static_cast<double>(timed_jit.launches) / o.reps;
    if (!ns.empty()) {
      std::vector<double> us;
      double total = 0;
      for (int64_t v : ns) {
        us.push_back(static_cast<double>(v) * 1e-3);
        total += us.back();
      }
      f.compile_us_median = median(us);
      f.compile_us_max = *std::max_element(us.begin(), us.end());
      f.compile_us_total = total;
    }
    std::vector<double> base;
    for (const JitTally* t : {&jit, &timed_jit})
      for (int64_t v : t->baseline_ns) base.push_back(static_cast<double>(v) * 1e-3);
    f.baselines = static_cast<int64_t>(base.size());
    if (!base.empty()) {
      f.baseline_us_median = median(base);
      f.baseline_us_max = *std::max_element(base.begin(), base.end());
    }
  }
  if (mode.compiles() && job.device == "cpu" && jit::cpu_kernel_disk_cache())
    time_disk_first_call(job, o, f, progress);
  f.median_ms = median(times);
  f.min_ms = *std::min_element(times.begin(), times.end());
  f.max_ms = *std::max_element(times.begin(), times.end());
  if (p.bytes > 0 && f.median_ms > 0) f.gbps = p.bytes / (f.median_ms * 1e-3) / 1e9;
  if (p.ops > 0) f.us_per_op = f.median_ms * 1e3 / p.ops;
  progress.done(f);
  return f;
}

void attach_ceilings(std::vector<Figure>& figures) {
  for (Figure& ceiling : figures) {
    if (ceiling.workload != "ceiling" || !ceiling.gbps || ceiling.stream_gbps) continue;
    ceiling.stream_gbps = ceiling.gbps;
    ceiling.ceiling_from = is_cuda_device(ceiling.device) ? "memcpy" : "stream";
    const Figure* best = nullptr;
    for (const Figure& c : figures)
      if (c.workload == "copy" && c.device == ceiling.device && c.gbps &&
          (!best || *c.gbps > *best->gbps))
        best = &c;
    if (best && *best->gbps > *ceiling.gbps) {  // copy_ beat the streaming copy: its times
      ceiling.ceiling_from = "copy_ " + best->mode;
      ceiling.median_ms = best->median_ms;
      ceiling.min_ms = best->min_ms;
      ceiling.max_ms = best->max_ms;
      ceiling.first_call_ms = best->first_call_ms;
      ceiling.gbps = best->gbps;
    }
    for (Figure& f : figures) {
      if (!f.gbps || f.device != ceiling.device) continue;
      f.ceiling_gbps = ceiling.gbps;
      f.copy_fraction = *f.gbps / *ceiling.gbps;
    }
  }
}

void attach_speedups(std::vector<Figure>& figures) {
  for (Figure& f : figures) {
    if (f.mode == "eager" || f.mode == "native") continue;
    for (const Figure& e : figures) {
      if (e.mode == "eager" && e.workload == f.workload && e.param == f.param &&
          e.device == f.device && f.median_ms > 0) {
        f.speedup_vs_eager = e.median_ms / f.median_ms;
        break;
      }
    }
  }
}

}  // namespace kiln::perf
