// Grad mode: whether ops record autograd nodes on this thread (NoGradGuard turns it off, e.g. for
// optimizer updates and inside backward()).
#pragma once

namespace kiln {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool on);
};

// RAII: sets grad mode for a scope and restores the previous state.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool on) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(on); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};

}  // namespace kiln
