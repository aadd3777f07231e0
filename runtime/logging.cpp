#include "runtime/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include "runtime/config.h"
#include "runtime/error.h"

namespace kiln::logging {

namespace {

constexpr std::array<const char*, static_cast<int>(Subsystem::kCount)> kNames = {
    "runtime", "ops", "tracer", "jit", "perf"};

spdlog::level::level_enum parse_level(std::string_view s) {
  for (int l = 0; l < spdlog::level::n_levels; ++l) {
    auto lvl = static_cast<spdlog::level::level_enum>(l);
    auto name = spdlog::level::to_string_view(lvl);
    if (s == std::string_view(name.data(), name.size())) return lvl;
  }
  // spdlog spells these "warning" and "error"; accept the short forms users write too.
  if (s == "warn") return spdlog::level::warn;
  if (s == "err") return spdlog::level::err;
  fail("KILN_LOG: unknown level '{}'; expected trace, debug, info, warn, error, critical or off",
       s);
}

// One item of a spec: the logger index (-1 for all) and its level.
struct LevelItem {
  int logger;
  spdlog::level::level_enum level;
};

// Parses a whole spec first, so that a bad spec raises before anything changes.
std::vector<LevelItem> parse_spec(std::string_view rest) {
  std::vector<LevelItem> items;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      items.push_back({-1, parse_level(item)});
      continue;
    }
    std::string_view name = item.substr(0, eq);
    auto lvl = parse_level(item.substr(eq + 1));
    int found = -1;
    for (size_t i = 0; i < kNames.size(); ++i)
      if (name == kNames[i]) found = static_cast<int>(i);
    KILN_CHECK(found >= 0,
               "KILN_LOG: unknown logger '{}'; expected runtime, ops, tracer, jit or perf", name);
    items.push_back({found, lvl});
  }
  return items;
}

struct Loggers {
  std::array<std::shared_ptr<spdlog::logger>, kNames.size()> loggers;
  Loggers() {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    for (size_t i = 0; i < kNames.size(); ++i) {
      loggers[i] = std::make_shared<spdlog::logger>(std::string("kiln.") + kNames[i], sink);
      loggers[i]->set_pattern("[%H:%M:%S.%e] [%n] [%l] %v");
      loggers[i]->set_level(spdlog::level::warn);
    }
    // KILN_LOG is applied once, when the loggers are created (thread-safe static
    // initialisation), so that a later apply_levels() is not overridden.
    for (const LevelItem& it : parse_spec(config().log)) {
      for (size_t i = 0; i < kNames.size(); ++i)
        if (it.logger < 0 || it.logger == static_cast<int>(i)) loggers[i]->set_level(it.level);
    }
  }
};

Loggers& loggers() {
  // Never destroyed: threads still running at exit (a thread's exit flush, a detached worker)
  // may log after static destructors start (ThreadSanitizer saw one use a destroyed logger).
  static Loggers& l = *new Loggers();
  return l;
}

}  // namespace

void check_levels(const std::string& spec) { parse_spec(spec); }

void apply_levels(const std::string& spec) {
  auto& ls = loggers().loggers;
  for (const LevelItem& it : parse_spec(spec)) {
    if (it.logger < 0)
      for (auto& l : ls) l->set_level(it.level);
    else
      ls[it.logger]->set_level(it.level);
  }
}

spdlog::logger& get(Subsystem s) { return *loggers().loggers[static_cast<int>(s)]; }

}  // namespace kiln::logging
