// What one subsystem's logger writes while a LogCapture lives (warnings a test expects to see,
// or not). JitLog: the JIT's, which most tests that capture read.
#pragma once
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <sstream>
#include <string>

#include "runtime/logging.h"

namespace kiln::testing {

class LogCapture {
 public:
  explicit LogCapture(logging::Subsystem subsystem)
      : subsystem_(subsystem), sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    logging::get(subsystem_).sinks().push_back(sink_);
  }
  ~LogCapture() { logging::get(subsystem_).sinks().pop_back(); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() const { return text_.str(); }
  // Occurrences of `part` in the text.
  int count(const std::string& part) const {
    int n = 0;
    const std::string t = text();
    for (size_t p = t.find(part); p != std::string::npos; p = t.find(part, p + 1)) ++n;
    return n;
  }

 private:
  logging::Subsystem subsystem_;
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

class JitLog : public LogCapture {
 public:
  JitLog() : LogCapture(logging::Subsystem::Jit) {}
};

}  // namespace kiln::testing
