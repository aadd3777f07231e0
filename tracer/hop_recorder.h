// Where a higher-order op (tracer/hop/) records its node when recording is on: the thread's
// segment at top level, or the body being traced when the op is nested inside another's body.
#pragma once
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::tracer {

class HopRecorder {
 public:
  // Records `op` (tracer/hop_nodes.h gives the layout of inputs, attrs and bodies) over the
  // tensors `inputs` and returns one lazy tensor per entry of `results`.
  virtual std::vector<Tensor> record_hop(OpId op, const Attrs& attrs, Subgraphs bodies,
                                         std::span<const Tensor> inputs,
                                         std::span<const ValueMeta> results) = 0;

 protected:
  ~HopRecorder() = default;
};

// The thread's recorder for higher-order ops; null when they run eagerly (KILN_JIT=0, or inside
// an EagerModeGuard, as when the interpreter runs a body).
HopRecorder* hop_recorder();

}  // namespace kiln::tracer
