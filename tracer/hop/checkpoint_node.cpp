#include "tracer/hop/checkpoint_node.h"

#include "runtime/autograd/engine.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/error.h"

namespace kiln::hop {

TensorList detached_inputs(const TensorList& args, const std::vector<bool>& requires_grad) {
  TensorList out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    out.push_back(args[i].detach());
    if (requires_grad[i]) out.back().requires_grad_(true);
  }
  return out;
}

CheckpointBackward::CheckpointBackward(Fn fn, const TensorList& args, const TensorList& outputs,
                                       PhiloxState rng)
    : fn_(std::move(fn)), rng_(rng) {
  args_.reserve(args.size());
  for (const Tensor& a : args) {
    args_.push_back(SavedTensor::save(a));
    arg_requires_grad_.push_back(a.impl()->requires_grad());
  }
  for (const Tensor& o : outputs) output_meta_.push_back(hop_meta(o));
}

void CheckpointBackward::release_saved() {
  args_.clear();
  released_ = true;
}

std::vector<Tensor> CheckpointBackward::apply(const Tensor& grad_output) {
  const Tensor grads[] = {grad_output};
  return apply_outputs(grads);
}

std::vector<Tensor> CheckpointBackward::apply_outputs(std::span<const Tensor> grad_outputs) {
  KILN_CHECK(!released_,
             "checkpoint: trying to backward through the graph a second time (the saved "
             "arguments were freed); call backward(grad, /*retain_graph=*/true) the first time");
  TensorList args;
  args.reserve(args_.size());
  for (size_t i = 0; i < args_.size(); ++i) {
    const SavedTensor& s = args_[i];
    uint32_t now = s.data.impl()->storage()->version();
    KILN_CHECK(now == s.version,
               "checkpoint: argument {} ({}) was modified by an in-place operation after the "
               "forward (version {}, expected {}); backward must recompute from the original "
               "values. Clone it before writing in place.",
               i, describe_meta(hop_meta(s.data)), now, s.version);
    args.push_back(s.data);
  }

  // Recompute under grad mode (backward runs with it off) with the forward's random numbers.
  AutoGradMode grad_on(true);
  PhiloxReplayGuard replay(rng_);
  TensorList inputs = detached_inputs(args, arg_requires_grad_);
  TensorList out = fn_(inputs);
  check_output_count("checkpoint", "fn (recomputed in backward)", out.size(), "the forward",
                     output_meta_.size());
  check_defined_outputs("checkpoint", "fn (recomputed in backward)", out);
  std::vector<Tensor> roots, grads;
  for (size_t i = 0; i < out.size(); ++i) {
    check_same_outputs("checkpoint", "fn (recomputed in backward)", i, "the forward's",
                       output_meta_[i], hop_meta(out[i]));
    if (i < grad_outputs.size() && grad_outputs[i].defined() && out[i].impl()->requires_grad()) {
      roots.push_back(out[i]);
      grads.push_back(grad_outputs[i]);
    }
  }
  // Gradients of captured leaves (weights in the body) accumulate into their .grad here; those
  // of the args land on the fresh leaves and go back along this node's edges.
  if (!roots.empty()) run_backward(roots, grads, /*retain_graph=*/false);
  std::vector<Tensor> result(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (arg_requires_grad_[i]) result[i] = inputs[i].grad();
  return result;
}

}  // namespace kiln::hop
