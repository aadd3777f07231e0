// The autograd graph: a Node turns the gradient of its output into gradients of its inputs and
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

class Node;

// Where one input's gradient goes: into input `input_nr` of `fn` (none when fn is null).
struct Edge {
  Ref<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return static_cast<bool>(fn); }
};

class Node : public RefCounted {
 public:
  // Gradients of this node's inputs (one per edge; undefined where not needed) from the gradient
  // of its output.
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  virtual std::string name() const = 0;
  // Frees saved tensors after a backward pass that does not retain the graph.
  virtual void release_saved() {}

  const std::vector<Edge>& next_edges() const { return next_; }
  std::vector<Edge>& next_edges() { return next_; }

 private:
  std::vector<Edge> next_;
};

// The sink for a leaf: adds the incoming gradient into leaf.grad().
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Ref<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::string name() const override { return "AccumulateGrad"; }

 private:
  Ref<TensorImpl> leaf_;
};

}  // namespace kiln
