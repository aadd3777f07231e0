// Renders the profiler's snapshot as the KILN_STATS summary: counts and times per event kind
// (all threads together), the reasons of flushes and fallbacks, the ops that took the most time,
// the recorder's regions (a summary line, then the regions that took the most time), and the
// CUDA allocator's peaks when a device was used. Op times
// are inclusive: meta function, mode/eager handler and autograd recording.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "runtime/profiler_buffers.h"

namespace kiln::profiler::detail {

namespace {

inline constexpr size_t kTopOps = 15;

double to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string bytes_text(int64_t b) {  // "-" for no run
  if (b < 0) return "-";
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024 * 1024));
}

void append_reasons(std::string& out, const char* title,
                    const std::map<std::string, int64_t, std::less<>>& reasons) {
  if (reasons.empty()) return;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "\n{:<40} {:>10}\n", title, "count");
  for (const auto& [reason, count] : reasons) fmt::format_to(it, "{:<40} {:>10}\n", reason, count);
}

// A summary of the region cache and the regions by the time spent in them (interpreting or
// compiling), from the recorded events.
void append_regions(std::string& out, const Snapshot& snap) {
  struct Region {
    int64_t hits = 0, misses = 0;
    Totals interpret, compile, plan;
    int64_t interpret_peak = -1, plan_peak = -1;  // the most bytes one run held (-1: no run)
    int64_t ns() const { return interpret.ns + compile.ns + plan.ns; }
  };
  std::map<uint64_t, Region> regions;
  for (const auto& th : snap.threads) {
    for (const Event& e : th.events) {
      switch (e.kind) {
        case EventKind::CacheHit:
          ++regions[e.region].hits;
          break;
        case EventKind::CacheMiss:
          ++regions[e.region].misses;
          break;
        case EventKind::Interpret: {
          Region& r = regions[e.region];
          r.interpret.add(e.end_ns - e.begin_ns);
          r.interpret_peak = std::max(r.interpret_peak, e.bytes);
          break;
        }
        case EventKind::PlanRun: {
          Region& r = regions[e.region];
          r.plan.add(e.end_ns - e.begin_ns);
          r.plan_peak = std::max(r.plan_peak, e.bytes);
          break;
        }
        case EventKind::Compile:
          regions[e.region].compile.add(e.end_ns - e.begin_ns);
          break;
        default:
          break;
      }
    }
  }
  if (regions.empty()) return;
  // The summary line: cached regions (region 0 is the recorder's "uncached": a family past
  // KILN_JIT_RECOMPILE_LIMIT, interpreted without a region), their hits and misses, the time
  // spent interpreting.
  int64_t cached = 0, hits = 0, misses = 0;
  Totals interpreted, planned;
  for (const auto& [id, r] : regions) {
    cached += id != 0;
    hits += r.hits;
    misses += r.misses;
    interpreted.count += r.interpret.count;
    interpreted.ns += r.interpret.ns;
    planned.count += r.plan.count;
    planned.ns += r.plan.ns;
  }
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "\n{} region(s), {} cache hit(s), {} miss(es), {} interpreted run(s) in {:.3f} ms",
                 cached, hits, misses, interpreted.count, to_ms(interpreted.ns));
  if (auto u = regions.find(0); u != regions.end())
    fmt::format_to(it, " ({} uncached)", u->second.interpret.count);
  fmt::format_to(it, ", {} planned run(s) in {:.3f} ms", planned.count, to_ms(planned.ns));
  out += '\n';

  std::vector<std::pair<uint64_t, Region>> order(regions.begin(), regions.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second.ns() > b.second.ns(); });
  fmt::format_to(it, "\ntop regions by time ({} of {})\n", std::min(order.size(), kTopOps),
                 order.size());
  // Peak: the most CPU memory one run allocated and held at once, interpreted and planned.
  fmt::format_to(it, "{:<18} {:>8} {:>8} {:>10} {:>12} {:>8} {:>12} {:>8} {:>12} {:>12} {:>12}\n",
                 "region", "hits", "misses", "interprets", "interp ms", "compiles", "compile ms",
                 "plan runs", "plan ms", "interp peak", "plan peak");
  for (size_t i = 0; i < order.size() && i < kTopOps; ++i) {
    const Region& r = order[i].second;
    const std::string id =
        order[i].first == 0 ? std::string("uncached") : fmt::format("{:#018x}", order[i].first);
    fmt::format_to(it,
                   "{:<18} {:>8} {:>8} {:>10} {:>12.3f} {:>8} {:>12.3f} {:>8} {:>12.3f} {:>12} "
                   "{:>12}\n",
                   id, r.hits, r.misses, r.interpret.count, to_ms(r.interpret.ns), r.compile.count,
                   to_ms(r.compile.ns), r.plan.count, to_ms(r.plan.ns),
                   bytes_text(r.interpret_peak), bytes_text(r.plan_peak));
  }
}

}  // namespace

std::string render_stats(const Snapshot& snap) {
  std::array<Totals, kNumEventKinds> kinds{};
  std::vector<Totals> ops(snap.op_names.size());
  std::map<std::string, int64_t, std::less<>> flush_reasons, fallback_reasons;
  int64_t dropped = 0;
  for (const auto& th : snap.threads) {
    for (int k = 0; k < kNumEventKinds; ++k) {
      kinds[k].count += th.kinds[k].count;
      kinds[k].ns += th.kinds[k].ns;
    }
    for (size_t op = 0; op < ops.size() && op < th.ops.size(); ++op) {
      ops[op].count += th.ops[op].count;
      ops[op].ns += th.ops[op].ns;
    }
    for (const auto& [r, n] : th.flush_reasons) flush_reasons[r] += n;
    for (const auto& [r, n] : th.fallback_reasons) fallback_reasons[r] += n;
    dropped += th.dropped;
  }

  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "\n== kiln stats: {:.3f} s profiled, {} thread(s) ==\n",
                 to_ms(snap.now_ns - snap.origin_ns) / 1e3, snap.threads.size());
  fmt::format_to(it, "{:<16} {:>10} {:>12} {:>10}\n", "event", "count", "total ms", "mean us");
  for (int k = 0; k < kNumEventKinds; ++k) {
    const Totals& t = kinds[k];
    const auto kind = static_cast<EventKind>(k);
    if (t.count == 0 && kind != EventKind::Op) continue;
    const bool instant =
        kind == EventKind::CacheHit || kind == EventKind::CacheMiss || kind == EventKind::Fallback;
    if (instant || t.count == 0)
      fmt::format_to(it, "{:<16} {:>10} {:>12} {:>10}\n", kind_label(kind), t.count, "-", "-");
    else
      fmt::format_to(it, "{:<16} {:>10} {:>12.3f} {:>10.3f}\n", kind_label(kind), t.count,
                     to_ms(t.ns), static_cast<double>(t.ns) / 1e3 / t.count);
  }
  if (const cuda::DeviceAllocatorStats& m = snap.cuda_memory; m.hits + m.misses > 0) {
    fmt::format_to(it,
                   "\ncuda memory: peak {:.1f} MiB in tensors, peak {:.1f} MiB held with the "
                   "cache; {} allocations ({} from the cache), {} cache releases\n",
                   static_cast<double>(m.peak_allocated) / (1 << 20),
                   static_cast<double>(m.peak_reserved) / (1 << 20), m.hits + m.misses, m.hits,
                   m.cache_releases);
  }
  append_reasons(out, "flush reason", flush_reasons);
  append_reasons(out, "fallback reason", fallback_reasons);

  std::vector<size_t> order;
  for (size_t op = 0; op < ops.size(); ++op)
    if (ops[op].count > 0) order.push_back(op);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ops[a].ns != ops[b].ns ? ops[a].ns > ops[b].ns : a < b;
  });
  const int64_t op_ns = std::max<int64_t>(kinds[static_cast<int>(EventKind::Op)].ns, 1);
  if (!order.empty()) {
    fmt::format_to(it, "\ntop ops by time ({} of {} used)\n", std::min(order.size(), kTopOps),
                   order.size());
    fmt::format_to(it, "{:<16} {:>10} {:>12} {:>10} {:>8}\n", "op", "count", "total ms", "mean us",
                   "% time");
    for (size_t i = 0; i < order.size() && i < kTopOps; ++i) {
      const Totals& t = ops[order[i]];
      fmt::format_to(it, "{:<16} {:>10} {:>12.3f} {:>10.3f} {:>7.1f}%\n", snap.op_names[order[i]],
                     t.count, to_ms(t.ns), static_cast<double>(t.ns) / 1e3 / t.count,
                     100.0 * t.ns / op_ns);
    }
  }
  append_regions(out, snap);
  if (dropped > 0)
    fmt::format_to(it, "\n{} trace events dropped (more than {} on one thread)\n", dropped,
                   kMaxEventsPerThread);
  return out;
}

}  // namespace kiln::profiler::detail
