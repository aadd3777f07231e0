// kiln-perf's command line: --workloads a,b --modes eager,interp --devices cpu --reps N --warmup N
// --json FILE --size small|default --list. Flags take "--flag value" or "--flag=value".
#include <fmt/format.h>
#include <charconv>

#include "perf/harness.h"
#include "perf/peers/peer.h"
#include "runtime/device.h"

namespace kiln::perf {

namespace {

std::vector<std::string> split_list(const std::string& flag, const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    std::string item = v.substr(start, comma - start);
    if (item.empty()) throw UsageError{fmt::format("{}: empty name in '{}'", flag, v)};
    out.push_back(item);
    start = comma + 1;
  }
  return out;
}

int parse_count(const std::string& flag, const std::string& v, int lo) {
  int n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < lo || n > 1000000)
    throw UsageError{fmt::format("{}: expected an integer >= {}, got '{}'", flag, lo, v)};
  return n;
}

}  // namespace

bool is_cuda_device(const std::string& name) { return name == "cuda" || name.starts_with("cuda:"); }

Device perf_device(const std::string& name) {
  if (name == "cpu") return Device::cpu();
  if (name == "cuda") return Device::cuda(0);
  int index = -1;
  const char* first = name.data() + 5;
  const char* last = name.data() + name.size();
  auto [p, ec] = std::from_chars(first, last, index);
  if (!name.starts_with("cuda:") || ec != std::errc() || p != last || index < 0 || index > 63)
    throw UsageError{fmt::format("unknown device '{}'; expected cpu, cuda or cuda:N", name)};
  return Device::cuda(index);
}

std::string usage_text() {
  return R"(usage: kiln-perf [options]
  --workloads a,b     workloads to run (default: every available one; see --list)
  --modes m,n         eager: op by op (KILN_JIT=0); interp: recorded by the tracer, flushed
                      and interpreted, never compiled (KILN_JIT=1 with no JIT planner); jit:
                      recorded and planned by the CPU JIT at first sight, synchronously, so
                      the first call holds planning and compiling and the timed runs the
                      steady state; libtorch: the same workloads in libtorch eager, same
                      process, run twice: at 1 thread and at kiln's thread count (its OpenMP
                      pool and OpenBLAS); the comparison table takes the faster per workload
                      (needs a build with -DKILN_WITH_LIBTORCH=ON).
                      Modes of one workload run one after the other, and each non-eager figure
                      gets its speedup over the same run's eager figure (--mode is an alias).
                      ceiling's streaming copy runs once, in mode native (plain C++)
  --devices d,e       cpu, cuda (cuda:N): on a CUDA device the workloads that run there
                      (copy, ceiling, gelu, layernorm, softmax; --list marks them) run in
                      the selected modes (device ops run eagerly in every mode: the JIT
                      plans CPU regions only), and ceiling is the driver's device-to-device
                      memcpy
  --reps N            timed repetitions after warm-up (default 10)
  --warmup N          untimed repetitions after the first call (default 2)
  --size S            small (quick, for the README table and CI) or default (BENCHMARKS.md sizes)
  --json FILE         also write the results as JSON
  --list              list the workloads and exit
Exit status: 0 ok, 1 a workload failed, 2 a bad or not-yet-available request.
)";
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError{fmt::format("{}: missing value", arg)};
      return argv[++i];
    };
    if (arg == "--workloads" || arg == "--workload")
      o.workloads = split_list(arg, take());
    else if (arg == "--modes" || arg == "--mode")
      o.modes = split_list(arg, take());
    else if (arg == "--devices" || arg == "--device")
      o.devices = split_list(arg, take());
    else if (arg == "--reps")
      o.reps = parse_count(arg, take(), 1);
    else if (arg == "--warmup")
      o.warmup = parse_count(arg, take(), 0);
    else if (arg == "--json")
      o.json = take();
    else if (arg == "--size") {
      std::string s = take();
      if (s == "small")
        o.size = Size::Small;
      else if (s == "default")
        o.size = Size::Default;
      else
        throw UsageError{fmt::format("--size: expected small or default, got '{}'", s)};
    } else if (arg == "--list")
      o.list = true;
    else if (arg == "--help" || arg == "-h")
      o.help = true;
    else
      throw UsageError{fmt::format("unknown argument '{}' (see --help)", argv[i])};
  }
  return o;
}

std::string list_text() {
  std::string out;
  for (const Workload& w : workloads()) {
    out += fmt::format("  {:<17}{}{}\n", w.name, w.what, w.cuda ? " [cpu, cuda]" : "");
    if (!w.unavailable.empty())
      out += fmt::format("  {:<17}  not yet available: {}\n", "", w.unavailable);
  }
  return out;
}

std::vector<Job> plan(const Options& o) {
  bool libtorch = false;
  for (const std::string& m : o.modes) {
    if (m == "libtorch") {
      if (!peer::libtorch_built())
        throw UsageError{
            "mode libtorch is not built in: install libtorch (Debian: apt-get install "
            "libtorch-dev), configure with -DKILN_WITH_LIBTORCH=ON (cmake --preset "
            "release-libtorch) and build kiln-perf there; see docs/building.md"};
      libtorch = true;
      continue;
    }
    if (m != "eager" && m != "interp" && m != "jit")
      throw UsageError{
          fmt::format("unknown mode '{}'; expected eager, interp, jit or libtorch", m)};
  }
  bool any_cuda = false;
  for (const std::string& d : o.devices) {
    const Device dev = perf_device(d);  // an unknown name throws first
    const bool cuda = !dev.is_cpu();
    if (cuda && !cuda_is_available())
      throw UsageError{fmt::format("device {} is not available: {}", d, cuda_unavailable_reason())};
    if (cuda && dev.index >= cuda_device_count())
      throw UsageError{fmt::format("device {} does not exist: this machine has {} CUDA device(s)",
                                   d, cuda_device_count())};
    any_cuda |= cuda;
  }
  if (any_cuda && libtorch)
    throw UsageError{
        "mode libtorch runs on the CPU only (Debian's libtorch has no CUDA); on a GPU, "
        "perf/torch_cuda.py times PyTorch on the same workloads (docs/performance.md)"};
  std::vector<const Workload*> selected;
  auto select_all = [&] {
    for (const Workload& w : workloads())
      if (w.unavailable.empty() && !w.summary) selected.push_back(&w);
  };
  if (o.workloads.empty()) {
    select_all();
  } else {
    for (const std::string& name : o.workloads) {
      const Workload* w = find_workload(name);
      if (!w) throw UsageError{fmt::format("unknown workload '{}'; --list shows them", name)};
      if (!w->unavailable.empty())
        throw UsageError{fmt::format("workload {} is not available yet: {}", name, w->unavailable)};
      if (w->summary) continue;  // no runs of its own
      if (libtorch && w->fixed_mode.empty() && !peer::libtorch_has(name))
        throw UsageError{fmt::format("workload {} has no libtorch version", name)};
      selected.push_back(w);
    }
    if (selected.empty()) select_all();  // compile_latency alone: the first call of every workload
  }
  // copy_fraction needs the same run's ceiling, the better of copy_ and the streaming copy:
  // measure both first when GB/s workloads want them.
  bool has_copy = false, has_ceiling = false, wants_ceiling = false;
  for (const Workload* w : selected) {
    has_copy |= w->name == "copy";
    has_ceiling |= w->name == "ceiling";
    wants_ceiling |= w->reports_gbps;
  }
  // Workload by workload, every mode in turn, so that the load of a shared machine hits the
  // modes of one workload alike (their ratio is the figure to trust). Each mode gets its own copy.
  const Workload* copy = find_workload("copy");
  const Workload* ceiling = find_workload("ceiling");
  auto runs_in = [](const Workload* w, const std::string& m) {
    return m != "libtorch" || peer::libtorch_has(w->name);  // default selection: skip, not fail
  };
  std::vector<Job> jobs;
  // A job per mode; libtorch twice, at 1 thread and at kiln's count, so that the comparison can
  // take libtorch at whichever is faster for the workload (docs/performance.md).
  auto add = [&](const Workload* w, const std::string& m, const std::string& d, bool implicit,
                 std::optional<int64_t> param) {
    if (!runs_in(w, m) || (is_cuda_device(d) && !w->cuda)) return;
    if (m != "libtorch") {
      jobs.push_back({w, m, d, implicit, param});
      return;
    }
    jobs.push_back({w, m, d, implicit, param, 1});
    if (num_threads() > 1) jobs.push_back({w, m, d, implicit, param, num_threads()});
  };
  for (const std::string& d : o.devices) {
    // The implicit ceiling comes right after the copy jobs, implicit or selected.
    auto add_ceiling = [&] {
      if (!has_ceiling && wants_ceiling && ceiling)
        jobs.push_back({ceiling, ceiling->fixed_mode, d, true});
    };
    if (!has_copy && wants_ceiling && copy) {
      for (const std::string& m : o.modes) add(copy, m, d, true, std::nullopt);
      add_ceiling();
    }
    for (const Workload* w : selected) {
      if (is_cuda_device(d) && !w->cuda) {
        if (!o.workloads.empty())  // named on the command line: say so rather than skip it
          throw UsageError{fmt::format(
              "workload {} does not run on {} yet (the CUDA workloads: copy, ceiling, gelu, "
              "layernorm, softmax)",
              w->name, d)};
        continue;
      }
      if (!w->fixed_mode.empty()) {
        jobs.push_back({w, w->fixed_mode, d, false});
        continue;
      }
      if (w->param_name.empty()) {
        for (const std::string& m : o.modes) add(w, m, d, false, std::nullopt);
        if (w == copy) add_ceiling();
        continue;
      }
      for (int64_t value : w->param_values(o.size))
        for (const std::string& m : o.modes) add(w, m, d, false, value);
    }
  }
  return jobs;
}

bool wants_latency_summary(const Options& o) {
  if (o.workloads.empty()) return true;
  for (const std::string& name : o.workloads)
    if (const Workload* w = find_workload(name); w && w->summary) return true;
  return false;
}

}  // namespace kiln::perf
