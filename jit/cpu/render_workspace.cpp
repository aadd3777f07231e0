#include "jit/cpu/render_workspace.h"

#include <exception>
#include <mutex>
#include <vector>

namespace kiln::jit {

namespace {

struct Pool {
  std::mutex mu;
  std::vector<std::unique_ptr<RenderWorkspace::Parts>> idle;
};

Pool& pool() {
  static auto* p = new Pool();
  return *p;
}

constexpr size_t kMaxIdle = 4;

}  // namespace

RenderWorkspace::RenderWorkspace() : exceptions_(std::uncaught_exceptions()) {
  Pool& p = pool();
  {
    std::lock_guard lock(p.mu);
    if (!p.idle.empty()) {
      parts_ = std::move(p.idle.back());
      p.idle.pop_back();
    }
  }
  if (!parts_) parts_ = std::make_unique<Parts>();
}

RenderWorkspace::~RenderWorkspace() {
  parts_->code.resetLogger();
  parts_->code.resetErrorHandler();
  parts_->code.reset(asmjit::ResetPolicy::kSoft);  // detaches the compiler; zones keep blocks
  if (std::uncaught_exceptions() > exceptions_) return;
  Pool& p = pool();
  std::lock_guard lock(p.mu);
  if (p.idle.size() < kMaxIdle) p.idle.push_back(std::move(parts_));
}

void reserve_idle_render_workspace(size_t instructions) {
  RenderWorkspace workspace;
  workspace.assembler().reserve(instructions);
}

}  // namespace kiln::jit
