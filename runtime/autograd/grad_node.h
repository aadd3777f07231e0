// The autograd graph: a GradNode turns the gradient of its output into gradients of its inputs and
// passes them along its edges. Nodes are built by the dispatcher as ops run (record_autograd) and
// walked by the engine in backward().
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/ref.h"
#include "runtime/small_vector.h"
#include "runtime/tensor.h"

namespace kiln {

class GradNode;

// Where one input's gradient goes: into input `input_nr` of `fn` (none when fn is null). For a
// node with several outputs, input_nr is the output_nr of the tensor the edge was taken from:
// the engine sums gradients per (node, input_nr).
struct Edge {
  Ref<GradNode> fn;
  uint32_t input_nr = 0;
  bool valid() const { return static_cast<bool>(fn); }
};

class GradNode : public RefCounted {
 public:
  // Gradients of this node's inputs (one per edge; undefined where not needed) from the gradient
  // of its output.
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  // The multi-output form the engine calls: grad_outputs[i] is the summed gradient of output i
  // (undefined where none reached it; the engine calls a node once at least one is defined).
  // Single-output nodes keep the default; nodes with several outputs override it.
  virtual std::vector<Tensor> apply_outputs(std::span<const Tensor> grad_outputs) {
    return grad_outputs.empty() ? std::vector<Tensor>{} : apply(grad_outputs[0]);
  }
  virtual std::string name() const = 0;
  // Frees saved tensors after a backward pass that does not retain the graph.
  virtual void release_saved() {}

  const std::vector<Edge>& next_edges() const { return next_; }
  std::vector<Edge>& next_edges() { return next_; }

 private:
  std::vector<Edge> next_;
};

// The sink for a leaf: adds the incoming gradient into leaf.grad().
class AccumulateGrad : public GradNode {
 public:
  explicit AccumulateGrad(Ref<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::string name() const override { return "AccumulateGrad"; }

 private:
  Ref<TensorImpl> leaf_;
};

}  // namespace kiln
