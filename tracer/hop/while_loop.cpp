// while_loop: carried = body_fn(carried) while cond_fn(carried) holds. Forward only: outputs that
// would require grad get a node that raises when backward reaches it.
#include "runtime/autograd/autograd_meta.h"
#include "runtime/error.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/traced.h"

namespace kiln {

namespace hop {

namespace {

// Stands in for the history of while_loop's outputs: the number of iterations is data
// dependent, so there is no fixed graph to differentiate (scan is the differentiable loop).
class WhileLoopBackward : public GradNode {
 public:
  std::vector<Tensor> apply(const Tensor&) override { fail_backward(); }
  std::vector<Tensor> apply_outputs(std::span<const Tensor>) override { fail_backward(); }
  std::string name() const override { return "WhileLoopBackward"; }

 private:
  [[noreturn]] static void fail_backward() {
    fail(
        "while_loop: gradients through while_loop are not supported (the number of iterations "
        "depends on data); use scan with a fixed number of steps, or detach() the outputs");
  }
};

// Replaces the history of every output that requires grad by one WhileLoopBackward node. The
// outputs become detached aliases (same storage), so the loop's own graph is freed.
TensorList make_forward_only(TensorList out) {
  Ref<GradNode> node;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].impl()->requires_grad()) continue;
    if (!node) node = Ref<GradNode>(new WhileLoopBackward());
    out[i] = out[i].detach();
    AutogradMeta& m = out[i].impl()->ensure_autograd();
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
  }
  return out;
}

}  // namespace

TensorList run_while_loop_eagerly(const CondFn& cond_fn, const Fn& body_fn,
                                  const TensorList& carried) {
  TensorList state = carried;
  while (read_predicate("while_loop", "the result of cond_fn", cond_fn(state))) {
    TensorList next = body_fn(state);
    check_outputs_match("while_loop", "body_fn", next, "carried", carried);
    state = std::move(next);
  }
  return make_forward_only(std::move(state));
}

}  // namespace hop

TensorList while_loop(std::function<Tensor(const TensorList&)> cond_fn, Fn body_fn,
                      const TensorList& carried) {
  hop::check_callable("while_loop", "cond_fn", static_cast<bool>(cond_fn));
  hop::check_callable("while_loop", "body_fn", static_cast<bool>(body_fn));
  hop::check_defined_inputs("while_loop", "carried", carried);
  if (auto traced = hop::traced_while_loop(cond_fn, body_fn, carried)) return *traced;
  return hop::run_while_loop_eagerly(cond_fn, body_fn, carried);
}

}  // namespace kiln
