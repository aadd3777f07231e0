// kiln-perf's outputs: the aligned table on stdout and the JSON file (keys fixed by
// BENCHMARKS.md: results[] of workload, mode, device, median_ms, min_ms, max_ms, gbps,
// copy_fraction, first_call_ms; the rest are extras: ceiling_gbps, us_per_op, speedup_vs_eager,
// region_hits, region_misses, region_uncached, kernels_compiled, compile_us_median,
// compile_us_max, compile_us_total, launches_per_run, baselines, baseline_us_median,
// baseline_us_max, layers, libtorch_threads, and on the ceiling
// row stream_gbps and ceiling_from), the jit compile summary and the compile_latency summary of
// first calls.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "perf/harness.h"
#include "perf/peers/peer.h"
#include "perf/stream_copy.h"

namespace kiln::perf {

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", int(c));
    else
      out += c;
  }
  return out + "\"";
}

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }
std::string json_number(const std::optional<double>& v) { return v ? json_number(*v) : "null"; }
std::string json_count(const std::optional<int64_t>& v) {
  return v ? fmt::format("{}", *v) : "null";
}

std::string cell(const std::optional<double>& v, const char* f) {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

// Rows of cells as aligned text: the first `left` columns left-aligned (names), the rest right.
std::string aligned(const std::vector<std::string>& head,
                    const std::vector<std::vector<std::string>>& rows, size_t left) {
  // Width in code points ("µ" is two bytes in UTF-8).
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> w(head.size());
  for (size_t i = 0; i < head.size(); ++i) {
    w[i] = width(head[i]);
    for (const auto& r : rows) w[i] = std::max(w[i], width(r[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::string pad(w[i] - width(cells[i]), ' ');
      out += i < left ? cells[i] + pad : pad + cells[i];
      out += i + 1 < cells.size() ? "  " : "\n";
    }
    return out;
  };
  std::string out = line(head);
  for (const auto& r : rows) out += line(r);
  return out;
}

// "compile_layers [layers=4]" for a parametrized figure, the workload's name otherwise.
std::string figure_name(const Figure& f) {
  std::string name = f.workload + (f.implicit ? "*" : "");
  return f.param ? fmt::format("{} [{}={}]", name, f.param_name, *f.param) : name;
}

// The mode as the tables show it: libtorch rows carry their thread count ("libtorch 1T").
std::string mode_label(const Figure& f) {
  return f.libtorch_threads ? fmt::format("{} {}T", f.mode, *f.libtorch_threads) : f.mode;
}

// A figure's headline number with its unit: GB/s, µs per op, or ms.
std::string headline(const Figure& f) {
  if (f.gbps) return fmt::format("{:.2f} GB/s", *f.gbps);
  if (f.us_per_op) return fmt::format("{:.3f} µs/op", *f.us_per_op);
  return fmt::format("{:.3f} ms", f.median_ms);
}

// kiln eager next to libtorch for every workload measured in both modes on one device: libtorch
// at 1 thread and at kiln's thread count, and the ratio against the faster of the two.
std::string comparison_text(const std::vector<Figure>& figures) {
  std::vector<std::vector<std::string>> rows;
  int threads = 0;
  for (const Figure& k : figures) {
    if (k.mode != "eager") continue;
    const Figure *one = nullptr, *all = nullptr;
    for (const Figure& t : figures) {
      if (t.mode != "libtorch" || t.workload != k.workload || t.param != k.param ||
          t.device != k.device || !t.libtorch_threads)
        continue;
      (*t.libtorch_threads == 1 ? one : all) = &t;
    }
    if (!one && !all) continue;
    const Figure* best = !all || (one && one->median_ms <= all->median_ms) ? one : all;
    rows.push_back({figure_name(k), k.shape, headline(k), one ? headline(*one) : "-",
                    all ? headline(*all) : "-", fmt::format("{}T", *best->libtorch_threads),
                    fmt::format("{:.2f}x", best->median_ms / k.median_ms)});
    threads = k.threads;
  }
  if (rows.empty()) return {};
  std::string out =
      fmt::format("\nkiln eager ({} threads) vs libtorch {} eager at its faster thread count:\n",
                  threads, peer::libtorch_version());
  std::vector<std::string> head = {
      "workload", "size",      "kiln eager", "libtorch 1T", fmt::format("libtorch {}T", threads),
      "best",     "kiln speed"};
  if (threads == 1) {  // one libtorch run per workload: no second column
    head.erase(head.begin() + 4);
    for (auto& r : rows) r.erase(r.begin() + 4);
  }
  out += aligned(head, rows, 2);
  out +=
      "kiln speed = the faster libtorch median time / kiln median time (above 1: kiln is "
      "faster); best = libtorch's faster thread count (at::set_num_threads and OpenBLAS's)\n";
  // Debian's libtorch runs its threads on libgomp, whose default active wait fights OpenBLAS's
  // threads for the cores (docs/performance.md): say which wait policy the figures had.
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  out += fmt::format("libtorch's OpenMP wait policy: {}\n",
                     wait ? fmt::format("OMP_WAIT_POLICY={}", wait)
                          : "OMP_WAIT_POLICY unset (libgomp spins a while, then sleeps)");
  return out;
}

constexpr const char* kLatencyNote =
    "jit first calls hold planning and compiling (synchronous, at first sight); disk first: the "
    "first call of a fresh case after the process forgot its plans and kernels, the kernels "
    "found in the CPU kernel disk cache (this run's own folder: jit/cpu/disk_cache.h), as in a "
    "program's second run; loaded: kernels taken from it (the rest rendered again)";

// The ceiling's streaming copy is plain C++ (mode "native"): no first call of a kiln mode.
bool in_latency(const Figure& f) { return !f.implicit && f.workload != "ceiling"; }

}  // namespace

std::string latency_text(const std::vector<Figure>& figures) {
  // One row per workload (and parameter) and device, one column group per mode.
  std::vector<std::string> modes;
  std::vector<const Figure*> keys;
  for (const Figure& f : figures) {
    if (!in_latency(f)) continue;
    if (std::find(modes.begin(), modes.end(), mode_label(f)) == modes.end())
      modes.push_back(mode_label(f));
    bool seen = false;
    for (const Figure* k : keys)
      seen |= k->workload == f.workload && k->param == f.param && k->device == f.device;
    if (!seen) keys.push_back(&f);
  }
  if (keys.empty()) return {};
  // Modes with a warm-disk first call get two more columns.
  std::vector<bool> disk(modes.size(), false);
  for (size_t i = 0; i < modes.size(); ++i)
    for (const Figure& f : figures)
      disk[i] = disk[i] || (in_latency(f) && mode_label(f) == modes[i] && f.disk_first_call_ms);
  std::vector<std::string> head = {"workload", "size"};
  for (size_t i = 0; i < modes.size(); ++i) {
    for (const char* col : {" first ms", " median ms", " first/median"})
      head.push_back(modes[i] + col);
    if (disk[i])
      for (const char* col : {" disk first ms", " loaded"}) head.push_back(modes[i] + col);
  }
  std::vector<std::vector<std::string>> rows;
  for (const Figure* k : keys) {
    std::vector<std::string> row = {figure_name(*k), k->shape};
    for (size_t i = 0; i < modes.size(); ++i) {
      const std::string& m = modes[i];
      const Figure* f = nullptr;
      for (const Figure& g : figures)
        if (in_latency(g) && g.workload == k->workload && g.param == k->param &&
            g.device == k->device && mode_label(g) == m)
          f = &g;
      if (!f) {
        row.insert(row.end(), {"-", "-", "-"});
        if (disk[i]) row.insert(row.end(), {"-", "-"});
        continue;
      }
      row.push_back(fmt::format("{:.3f}", f->first_call_ms));
      row.push_back(fmt::format("{:.3f}", f->median_ms));
      row.push_back(f->median_ms > 0 ? fmt::format("{:.2f}x", f->first_call_ms / f->median_ms)
                                     : "-");
      if (disk[i]) {
        row.push_back(cell(f->disk_first_call_ms, "{:.3f}"));
        row.push_back(f->kernels_loaded ? fmt::format("{}", *f->kernels_loaded) : "-");
      }
    }
    rows.push_back(std::move(row));
  }
  std::string out =
      "\ncompile_latency: first call of a fresh case (empty region cache for its "
      "graph) against the steady-state median:\n";
  out += aligned(head, rows, 2);
  return out + fmt::format("{}\n", kLatencyNote);
}

std::string latency_json(const std::vector<Figure>& figures) {
  bool disk = false;
  for (const Figure& f : figures) disk = disk || (in_latency(f) && f.disk_first_call_ms);
  std::string out = fmt::format("{{\"disk_cache\": {}, \"note\": {}, \"first_calls\": [",
                                disk ? "\"cpu\"" : "null", json_string(kLatencyNote));
  bool first = true;
  for (const Figure& f : figures) {
    if (!in_latency(f)) continue;
    out += first ? "\n    {" : ",\n    {";
    first = false;
    out += fmt::format("\"workload\": {}, \"mode\": {}, \"device\": {}, ", json_string(f.workload),
                       json_string(f.mode), json_string(f.device));
    if (f.param) out += fmt::format("{}: {}, ", json_string(f.param_name), *f.param);
    if (f.libtorch_threads) out += fmt::format("\"libtorch_threads\": {}, ", *f.libtorch_threads);
    out += fmt::format("\"first_call_ms\": {}, \"median_ms\": {}, \"first_over_median\": {}, ",
                       json_number(f.first_call_ms), json_number(f.median_ms),
                       json_number(f.median_ms > 0 ? f.first_call_ms / f.median_ms : NAN));
    out += fmt::format("\"disk_first_call_ms\": {}, \"kernels_loaded\": {}}}",
                       json_number(f.disk_first_call_ms), json_count(f.kernels_loaded));
  }
  return out + "\n  ]}";
}

std::string table_text(const std::vector<Figure>& figures) {
  std::vector<std::string> head = {"workload", "mode",     "device",          "size", "median ms",
                                   "min ms",   "max ms",   "first ms",        "GB/s", "% ceiling",
                                   "µs/op",    "vs eager", "regions hit/miss"};
  std::vector<std::vector<std::string>> rows;
  bool implicit = false, speedups = false, regions = false;
  std::string ceilings;
  for (const Figure& f : figures) {
    if (f.workload == "ceiling" && f.stream_gbps) {
      double best_copy = 0;
      for (const Figure& c : figures)
        if (c.workload == "copy" && c.device == f.device && c.gbps)
          best_copy = std::max(best_copy, *c.gbps);
      const std::string reference =
          is_cuda_device(f.device)
              ? fmt::format("the driver's device-to-device memcpy ({:.2f} GB/s)", *f.stream_gbps)
              : fmt::format("a streaming copy ({} non-temporal stores, {} threads: {:.2f} GB/s)",
                            stream_copy_kernel(), f.threads, *f.stream_gbps);
      ceilings +=
          fmt::format("ceiling ({}) = the better of {} and copy_ (best mode: {:.2f} GB/s): {}\n",
                      f.device, reference, best_copy, f.ceiling_from);
    }
    rows.push_back({figure_name(f), mode_label(f), f.device, f.shape,
                    fmt::format("{:.3f}", f.median_ms), fmt::format("{:.3f}", f.min_ms),
                    fmt::format("{:.3f}", f.max_ms), fmt::format("{:.3f}", f.first_call_ms),
                    cell(f.gbps, "{:.2f}"),
                    f.copy_fraction ? fmt::format("{:.1f}%", 100 * *f.copy_fraction) : "-",
                    cell(f.us_per_op, "{:.3f}"), cell(f.speedup_vs_eager, "{:.2f}x"),
                    f.region_hits ? fmt::format("{}/{}", *f.region_hits, *f.region_misses) : "-"});
    implicit |= f.implicit;
    speedups |= f.speedup_vs_eager.has_value();
    regions |= f.region_hits.has_value();
  }
  // An eager-only run keeps the table it always had: drop the columns that would be all "-".
  size_t keep = head.size() - (regions ? 0 : speedups ? 1 : 2);
  head.resize(keep);
  for (auto& r : rows) r.resize(keep);
  std::string out = aligned(head, rows, 4);
  if (implicit) out += "* measured as the reference for % ceiling\n";
  out += ceilings;
  if (!ceilings.empty()) out += "% ceiling = GB/s over the ceiling (JSON copy_fraction)\n";
  if (speedups)
    out += "vs eager = the same run's eager median / this median (above 1: faster than eager)\n";
  if (regions)
    out += "regions hit/miss: region-cache lookups over the first call, warm-up and timed runs\n";
  return out + comparison_text(figures);
}

std::string jit_text(const std::vector<Figure>& figures) {
  std::vector<std::vector<std::string>> rows;
  for (const Figure& f : figures) {
    if (!f.kernels_compiled) continue;
    rows.push_back(
        {figure_name(f), f.shape, fmt::format("{:.3f}", f.first_call_ms),
         fmt::format("{:.3f}", f.median_ms), fmt::format("{:.3f}", f.first_call_ms - f.median_ms),
         fmt::format("{}", *f.kernels_compiled), cell(f.compile_us_median, "{:.1f}"),
         cell(f.compile_us_max, "{:.1f}"),
         f.compile_us_total ? fmt::format("{:.3f}", *f.compile_us_total * 1e-3) : "-",
         cell(f.launches_per_run, "{:.1f}"), f.baselines ? fmt::format("{}", *f.baselines) : "-",
         cell(f.baseline_us_median, "{:.1f}"), cell(f.baseline_us_max, "{:.1f}")});
  }
  if (rows.empty()) return {};
  std::string out =
      "\njit: first call (recording, planning and compiling, synchronous) against the steady "
      "state, and the CPU kernels compiled:\n";
  out += aligned({"workload", "size", "first ms", "median ms", "first - median ms", "kernels",
                  "compile µs median", "compile µs max", "compile ms total", "launches/run",
                  "baselines", "baseline µs median", "baseline µs max"},
                 rows, 2);
  return out +
         "kernels: rendered during the job (first call, warm-up, timed runs); each jit job starts "
         "with no kernel of an earlier job, in memory or on disk\n"
         "launches/run: kernel launches per timed run (0: nothing fused, the region ran its ops "
         "as eager steps or stayed interpreted)\n"
         "baselines: kernels launched at first sight with baseline code (KILN_JIT_BASELINE), "
         "their renders (counted in kernels) made on the planning thread; baseline µs: the "
         "time to make it, which the first call waits for instead of the render\n";
}

void write_json(const std::string& path, const std::vector<Figure>& figures, const Options& o,
                const std::string& latency) {
  std::string out = "{\n";
  out += fmt::format("  \"tool\": \"kiln-perf\",\n  \"size\": {},\n  \"reps\": {},\n",
                     json_string(o.size == Size::Small ? "small" : "default"), o.reps);
  if (peer::libtorch_built())  // mode "libtorch" rows are this version's
    out += fmt::format("  \"libtorch\": {},\n", json_string(peer::libtorch_version()));
  out += fmt::format("  \"warmup\": {},\n  \"threads\": {},\n  \"results\": [", o.warmup,
                     num_threads());
  for (size_t i = 0; i < figures.size(); ++i) {
    const Figure& f = figures[i];
    out += i ? ",\n    {" : "\n    {";
    out += fmt::format("\"workload\": {}, \"mode\": {}, \"device\": {}, ", json_string(f.workload),
                       json_string(f.mode), json_string(f.device));
    if (f.param) out += fmt::format("{}: {}, ", json_string(f.param_name), *f.param);
    out += fmt::format("\"median_ms\": {}, \"min_ms\": {}, \"max_ms\": {}, ",
                       json_number(f.median_ms), json_number(f.min_ms), json_number(f.max_ms));
    out += fmt::format("\"gbps\": {}, \"copy_fraction\": {}, \"first_call_ms\": {}, ",
                       json_number(f.gbps), json_number(f.copy_fraction),
                       json_number(f.first_call_ms));
    out += fmt::format("\"us_per_op\": {}, \"shape\": {}, \"reps\": {}, \"warmup\": {}, ",
                       json_number(f.us_per_op), json_string(f.shape), f.reps, f.warmup);
    out += fmt::format("\"threads\": {}, \"reference_only\": {}, ", f.threads,
                       f.implicit ? "true" : "false");
    out += fmt::format("\"speedup_vs_eager\": {}, \"region_hits\": {}, \"region_misses\": {}, ",
                       json_number(f.speedup_vs_eager), json_count(f.region_hits),
                       json_count(f.region_misses));
    out += fmt::format("\"region_uncached\": {}, \"ceiling_gbps\": {}, ",
                       json_count(f.region_uncached), json_number(f.ceiling_gbps));
    out += fmt::format("\"kernels_compiled\": {}, \"compile_us_median\": {}, ",
                       json_count(f.kernels_compiled), json_number(f.compile_us_median));
    out += fmt::format("\"compile_us_max\": {}, \"compile_us_total\": {}, ",
                       json_number(f.compile_us_max), json_number(f.compile_us_total));
    out += fmt::format("\"baselines\": {}, \"baseline_us_median\": {}, \"baseline_us_max\": {}, ",
                       json_count(f.baselines), json_number(f.baseline_us_median),
                       json_number(f.baseline_us_max));
    out += fmt::format("\"launches_per_run\": {}, ", json_number(f.launches_per_run));
    out += fmt::format("\"libtorch_threads\": {}",
                       f.libtorch_threads ? fmt::format("{}", *f.libtorch_threads) : "null");
    if (f.workload == "ceiling")
      out += fmt::format(", \"stream_gbps\": {}, \"ceiling_from\": {}", json_number(f.stream_gbps),
                         json_string(f.ceiling_from));
    out += "}";
  }
  out += "\n  ]";
  if (!latency.empty()) out += ",\n  \"compile_latency\": " + latency;
  out += "\n}\n";
  std::FILE* file = std::fopen(path.c_str(), "w");
  KILN_CHECK(file != nullptr, "cannot open '{}' for writing", path);
  bool ok = std::fwrite(out.data(), 1, out.size(), file) == out.size();
  ok = (std::fclose(file) == 0) && ok;
  KILN_CHECK(ok, "writing '{}' failed", path);
}

void check_json_path(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) throw UsageError{fmt::format("--json: cannot open '{}' for writing", path)};
  std::fclose(file);
}

}  // namespace kiln::perf
