#include "runtime/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <array>
#include <memory>
#include <string_view>

#include "runtime/config.h"
#include "runtime/error.h"

namespace kiln::log {

namespace {

constexpr std::array<const char*, static_cast<int>(Subsystem::kCount)> kNames = {
    "runtime", "ops", "tracer", "jit", "perf"};

spdlog::level::level_enum parse_level(std::string_view s) {
  for (int l = 0; l < spdlog::level::n_levels; ++l) {
    auto lvl = static_cast<spdlog::level::level_enum>(l);
    auto name = spdlog::level::to_string_view(lvl);
    if (s == std::string_view(name.data(), name.size())) return lvl;
  }
  if (s == "warning") return spdlog::level::warn;
  fail("KILN_LOG: unknown level '{}'; expected trace, debug, info, warn, error, critical or off", s);
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
  }
};

Loggers& loggers() {
  static Loggers l;
  return l;
}

}  // namespace

void apply_levels(const std::string& spec) {
  auto& ls = loggers().loggers;
  std::string_view rest(spec);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      auto lvl = parse_level(item);
      for (auto& l : ls) l->set_level(lvl);
      continue;
    }
    std::string_view name = item.substr(0, eq);
    auto lvl = parse_level(item.substr(eq + 1));
    bool found = false;
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (name == kNames[i]) {
        ls[i]->set_level(lvl);
        found = true;
      }
    }
    KILN_CHECK(found, "KILN_LOG: unknown logger '{}'; expected runtime, ops, tracer, jit or perf",
               name);
  }
}

spdlog::logger& get(Subsystem s) {
  // KILN_LOG is applied once, on first use (thread-safe static initialisation).
  static const bool applied = (apply_levels(config().log), true);
  (void)applied;
  return *loggers().loggers[static_cast<int>(s)];
}

}  // namespace kiln::log
