// checkpoint: runs the body once, keeps only its arguments, and recomputes it in backward
// (tracer/hop/checkpoint_node.h), trading compute for the memory of its activations.
#include "runtime/autograd/autograd_meta.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/record.h"
#include "runtime/error.h"
#include "tracer/hop/checkpoint_node.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/traced.h"

namespace kiln {

namespace hop {

TensorList run_checkpoint_eagerly(const Fn& fn, const TensorList& args) {
  if (!GradMode::is_enabled()) {  // no graph would be built: nothing to save or drop
    TensorList out = fn(args);
    check_defined_outputs("checkpoint", "fn", out);
    return out;
  }
  // Run over fresh leaves so that the body's graph ends at them (and not in the caller's
  // history), note where the random draws start, then keep the outputs and drop the graph.
  PhiloxState rng = philox_state();
  std::vector<bool> requires_grad;
  std::vector<uint32_t> versions;
  for (const Tensor& a : args) {
    requires_grad.push_back(a.impl()->requires_grad());
    versions.push_back(a.impl()->storage()->version());
  }
  TensorList out = fn(detached_inputs(args, requires_grad));
  check_defined_outputs("checkpoint", "fn", out);

  bool any = false;
  for (const Tensor& o : out) any |= o.impl()->requires_grad();
  if (!any) return out;  // nothing (not even a captured weight) requires grad
  // Backward recomputes fn from the arguments: a body that wrote one would recompute from the
  // written value (and write it again).
  for (size_t i = 0; i < args.size(); ++i)
    KILN_CHECK(args[i].impl()->storage()->version() == versions[i],
               "checkpoint: fn modified argument {} ({}) in place; backward recomputes fn from its "
               "arguments, which must keep their values. Clone it inside fn before writing.",
               i, describe_meta(hop_meta(args[i])));

  Ref<GradNode> node(new CheckpointBackward(fn, args, out, rng));
  for (const Tensor& a : args) node->next_edges().push_back(gradient_edge(a));
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].impl()->requires_grad()) continue;
    out[i] = out[i].detach();  // the body's graph (and its saved activations) dies here
    AutogradMeta& m = out[i].impl()->ensure_autograd();
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
  }
  return out;
}

}  // namespace hop

TensorList checkpoint(Fn fn, const TensorList& args) {
  hop::check_callable("checkpoint", "fn", static_cast<bool>(fn));
  hop::check_defined_inputs("checkpoint", "args", args);
  // With gradients checkpoint keeps its own autograd node (eager form); without, it is a call.
  if (auto traced = hop::traced_call("checkpoint", fn, args)) return *traced;
  return hop::run_checkpoint_eagerly(fn, args);
}

}  // namespace kiln
