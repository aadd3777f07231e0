// kiln-perf: the benchmark suite of BENCHMARKS.md. See perf/harness.h for the pieces and
// `kiln-perf --help` for the flags.
#include <fmt/format.h>

#include <cstdio>

#include "jit/cpu/warm_up.h"
#include "perf/harness.h"
#include "perf/run_disk_cache.h"

int main(int argc, char** argv) {
  using namespace kiln::perf;
  try {
    Options o = parse_options(argc, argv);
    if (o.help) {
      fmt::print("{}", usage_text());
      return 0;
    }
    if (o.list) {
      fmt::print("workloads:\n{}", list_text());
      return 0;
    }
    std::vector<Job> jobs = plan(o);
    // A program run with KILN_JIT=1 starts the CPU renderer's warm-up at its first op
    // (jit/cpu/warm_up.h); kiln-perf starts in eager mode, so it starts it here when a job
    // compiles, as that program would: the jit jobs' compile columns are then those of a
    // program's first kernels, not of the process's first touches of the renderer's pages.
    for (const Job& j : jobs)
      if (j.mode == "jit") kiln::jit::start_cpu_renderer_warm_up();
    RunDiskCache disk_cache;
    if (!o.json.empty()) check_json_path(o.json);
    std::vector<Figure> figures;
    for (size_t i = 0; i < jobs.size(); ++i)
      figures.push_back(
          measure(jobs[i], o, static_cast<int>(i + 1), static_cast<int>(jobs.size())));
    attach_ceilings(figures);
    attach_speedups(figures);
    fmt::print("\n{}", table_text(figures));
    fmt::print("{}", jit_text(figures));
    bool latency = wants_latency_summary(o);
    if (latency) fmt::print("{}", latency_text(figures));
    if (!o.json.empty()) {
      write_json(o.json, figures, o, latency ? latency_json(figures) : std::string());
      fmt::print(stderr, "kiln-perf: wrote {}\n", o.json);
    }
    return 0;
  } catch (const UsageError& e) {
    fmt::print(stderr, "kiln-perf: {}\n", e.message);
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kiln-perf: {}\n", e.what());
    return kExitFailure;
  }
}
