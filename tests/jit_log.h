// What the JIT's logger writes while a JitLog lives (warnings a test expects to see, or not).
#pragma once
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <sstream>
#include <string>

#include "runtime/logging.h"

namespace kiln::testing {

class JitLog {
 public:
  JitLog() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    logging::get(logging::Subsystem::Jit).sinks().push_back(sink_);
  }
  ~JitLog() { logging::get(logging::Subsystem::Jit).sinks().pop_back(); }
  std::string text() const { return text_.str(); }
  int count(const std::string& part) const {
    int n = 0;
    std::string t = text();
    for (size_t p = t.find(part); p != std::string::npos; p = t.find(part, p + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace kiln::testing
