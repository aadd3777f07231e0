// CheckpointBackward: the autograd node of checkpoint's outputs. It keeps only the body and its
// arguments; backward runs the body again (same random numbers) with grad mode on and
// back-propagates the incoming gradients through that fresh graph.
#pragma once
#include <vector>

#include "runtime/autograd/grad_node.h"
#include "runtime/autograd/op_node.h"
#include "runtime/philox.h"
#include "tracer/hop/hop.h"
#include "tracer/hop/hop_checks.h"

namespace kiln::hop {

class CheckpointBackward : public GradNode {
 public:
  // `outputs` are the forward's outputs (for their metadata); `rng` is where the forward's random
  // draws started. Edges (one per arg) are set by the caller.
  CheckpointBackward(Fn fn, const TensorList& args, const TensorList& outputs, PhiloxState rng);

  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::vector<Tensor> apply_outputs(std::span<const Tensor> grad_outputs) override;
  std::string name() const override { return "CheckpointBackward"; }
  void release_saved() override;

 private:
  Fn fn_;
  std::vector<SavedTensor> args_;
  std::vector<bool> arg_requires_grad_;
  std::vector<HopMeta> output_meta_;
  PhiloxState rng_;
  bool released_ = false;
};

// Fresh leaves sharing each arg's storage, requiring grad where the arg does: the body's inputs,
// so that its graph starts at them and not at the caller's history.
TensorList detached_inputs(const TensorList& args, const std::vector<bool>& requires_grad);

}  // namespace kiln::hop
