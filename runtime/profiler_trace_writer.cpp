// Renders the profiler's snapshot as a Chrome trace: the JSON Object Format of the Trace Event
// Format ({"traceEvents": [...]}), which chrome://tracing and ui.perfetto.dev both load.
// Timestamps ("ts") and durations ("dur") are microseconds since profiler::start(), written with
// 3 decimals (nanosecond resolution). Complete events have ph "X", instant events ph "i" (thread
// scope), and "M" metadata events name the process and each thread. The per-op counters go in
// the extra top-level key "kilnOpTotals" (trace viewers keep unknown keys as metadata).
#include <fmt/format.h>

#include <iterator>

#include "runtime/profiler_buffers.h"

namespace kiln::profiler::detail {

namespace {

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<int>(c));
        else
          out += c;
    }
  }
  out += '"';
}

double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

void append_event(std::string& out, const Snapshot& snap, int64_t tid, const Event& e) {
  auto it = std::back_inserter(out);
  const std::string_view name = e.kind == EventKind::Op
                                    ? std::string_view(snap.op_names[static_cast<int>(e.op)])
                                    : std::string_view(e.name);
  out += "{\"name\":";
  append_json_string(out, name);
  fmt::format_to(it, ",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{:.3f}", kind_category(e.kind),
                 snap.pid, tid, to_us(e.begin_ns - snap.origin_ns));
  if (e.end_ns == kInstant)
    out += ",\"ph\":\"i\",\"s\":\"t\"";
  else
    fmt::format_to(it, ",\"ph\":\"X\",\"dur\":{:.3f}", to_us(e.end_ns - e.begin_ns));
  out += ",\"args\":{";
  switch (e.kind) {
    case EventKind::Op:
      fmt::format_to(it, "\"seq\":{}", e.number);
      break;
    case EventKind::Flush:
    case EventKind::Fallback:
      out += "\"reason\":";
      append_json_string(out, e.text);
      break;
    case EventKind::CacheHit:
    case EventKind::CacheMiss:
      fmt::format_to(it, "\"region\":\"{:#018x}\"", e.region);
      break;
    case EventKind::Interpret:
    case EventKind::PlanRun:
      fmt::format_to(it, "\"region\":\"{:#018x}\",\"nodes\":{},\"peak_bytes\":{}", e.region,
                     e.number, e.bytes);
      break;
    case EventKind::Compile:
      out += "\"tier\":";
      append_json_string(out, e.text);
      fmt::format_to(it, ",\"region\":\"{:#018x}\"", e.region);
      break;
    case EventKind::KernelLaunch:
    case EventKind::KernelCompile:
    case EventKind::PlanStep:
    case EventKind::RegionTrace:  // the event's name is the region's
    case EventKind::kCount:
      break;
  }
  out += "}}";
}

void append_metadata(std::string& out, const char* what, int64_t pid, int64_t tid,
                     std::string_view name) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":", what,
                 pid, tid);
  append_json_string(out, name);
  out += "}}";
}

}  // namespace

std::string render_trace(const Snapshot& snap) {
  std::string out;
  auto it = std::back_inserter(out);
  out += "{\"traceEvents\":[\n";
  append_metadata(out, "process_name", snap.pid, snap.pid, "kiln");
  for (size_t t = 0; t < snap.threads.size(); ++t) {
    const Snapshot::Thread& th = snap.threads[t];
    out += ",\n";
    append_metadata(out, "thread_name", snap.pid, th.tid,
                    fmt::format("kiln thread {} (tid {})", t, th.tid));
    for (const Event& e : th.events) {
      out += ",\n";
      append_event(out, snap, th.tid, e);
    }
  }
  out += "\n],\n\"displayTimeUnit\":\"ns\",\n";
  int64_t dropped = 0;
  for (const auto& th : snap.threads) dropped += th.dropped;
  fmt::format_to(it,
                 "\"otherData\":{{\"producer\":\"kiln profiler\",\"op_sample_every\":\"{}\","
                 "\"op_sample_min_us\":\"{:.3f}\",\"dropped_events\":\"{}\"}},\n",
                 snap.sample_every, to_us(snap.sample_min_ns), dropped);
  out += "\"kilnOpTotals\":[";
  bool first = true;
  for (const auto& th : snap.threads) {
    for (int op = 0; op < static_cast<int>(th.ops.size()); ++op) {
      const Totals& tot = th.ops[op];
      if (tot.count == 0) continue;
      out += first ? "\n" : ",\n";
      first = false;
      out += "{\"name\":";
      append_json_string(out, snap.op_names[op]);
      fmt::format_to(it, ",\"tid\":{},\"count\":{},\"total_us\":{:.3f}}}", th.tid, tot.count,
                     to_us(tot.ns));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace kiln::profiler::detail
