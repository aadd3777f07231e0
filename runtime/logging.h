// Logging: one spdlog logger per subsystem ("runtime", "ops", "tracer", "jit", "perf"), with
// levels from KILN_LOG ("warn", "info,ops=debug"). Check `should_log` before building costly
// arguments; a disabled KILN_LOG_* line costs one branch.
#pragma once
#include <spdlog/spdlog.h>

#include <string>

namespace kiln::logging {

enum class Subsystem { Runtime, Ops, Tracer, Jit, Perf, kCount };

spdlog::logger& get(Subsystem s);

// Applies a KILN_LOG-style spec; throws kiln::Error on an unknown level or logger name.
void apply_levels(const std::string& spec);
// Validates a KILN_LOG-style spec without applying it (config_from_env uses it).
void check_levels(const std::string& spec);

}  // namespace kiln::logging

#define KILN_LOG_AT(sub, lvl, ...)                                              \
  do {                                                                          \
    auto& kiln_logger_ = ::kiln::logging::get(::kiln::logging::Subsystem::sub); \
    if (kiln_logger_.should_log(lvl)) [[unlikely]]                              \
      kiln_logger_.log(lvl, __VA_ARGS__);                                       \
  } while (0)
#define KILN_DEBUG(sub, ...) KILN_LOG_AT(sub, spdlog::level::debug, __VA_ARGS__)
#define KILN_INFO(sub, ...) KILN_LOG_AT(sub, spdlog::level::info, __VA_ARGS__)
#define KILN_WARN(sub, ...) KILN_LOG_AT(sub, spdlog::level::warn, __VA_ARGS__)
