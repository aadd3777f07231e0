#include "jit/plan/validating_plan.h"

#include <atomic>
#include <cstring>
#include <string>

#include "jit/loop/loop_kernel.h"
#include "runtime/error.h"

namespace kiln::jit {

namespace {

// Equal bytes, except that any two NaNs of a floating dtype are equal: the contract leaves a
// NaN's sign and payload open (docs/jit.md), so KILN_JIT_VALIDATE must not raise on them.
template <class T>
bool same_values(const T* x, const T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(x + i, y + i, sizeof(T)) != 0 && !(x[i] != x[i] && y[i] != y[i])) return false;
  return true;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.impl()->dtype() != b.impl()->dtype() || a.impl()->sizes() != b.impl()->sizes())
    return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const int64_t n = ca.impl()->numel();
  switch (ca.impl()->dtype()) {
    case DType::Float32:
      return same_values(static_cast<const float*>(ca.impl()->data()),
                         static_cast<const float*>(cb.impl()->data()), n);
    case DType::Float64:
      return same_values(static_cast<const double*>(ca.impl()->data()),
                         static_cast<const double*>(cb.impl()->data()), n);
    default:
      return std::memcmp(ca.impl()->data(), cb.impl()->data(),
                         static_cast<size_t>(n * itemsize(ca.impl()->dtype()))) == 0;
  }
}

class ValidatingPlan final : public tracer::RegionPlan {
 public:
  explicit ValidatingPlan(std::unique_ptr<JitPlan> p) : plan_(std::move(p)) {}
  tracer::InterpretResult run(const tracer::RunArgs& args) override {
    if (checked_.fetch_add(1) >= kChecks) return plan_->run(args);
    tracer::InterpretResult want = plan_->run_reference(args);
    tracer::InterpretResult got = plan_->run(args);
    for (size_t o = 0; o < got.outputs.size(); ++o) {
      if (same_bytes(got.outputs[o], want.outputs[o])) continue;
      fail("KILN_JIT_VALIDATE: output {} of a compiled region differs from eager; the kernel: {}",
           o, describe_producer(o));
    }
    return got;
  }

 private:
  std::string describe_producer(size_t o) const {
    for (const Step& s : plan_->steps())
      if (s.kernel)
        for (size_t k = 0; k < s.kernel->outputs.size(); ++k)
          if (s.kernel->outputs[k] == plan_->graph().outputs[o])
            return to_text(s.kernel->kernel->source());
    std::string all;
    for (const Step& s : plan_->steps())
      if (s.kernel) all += to_text(s.kernel->kernel->source());
    return all.empty() ? "(an eager step)" : all;
  }
  static constexpr int kChecks = 2;
  std::unique_ptr<JitPlan> plan_;
  std::atomic<int> checked_{0};
};

}  // namespace

std::unique_ptr<tracer::RegionPlan> validating_plan(std::unique_ptr<JitPlan> plan) {
  return std::make_unique<ValidatingPlan>(std::move(plan));
}

}  // namespace kiln::jit
