// The seam between a rewritten graph and the region's run arguments: RunArgs (tracer/backend.h)
// are indexed by the graph the region recorded, while the plan runs the graph the passes
// produced. An ArgMap turns the one into the other on every run: the original inputs followed by
// the folded constants, the promoted scalars and Philox words of the nodes that remain, in the
// rewritten graph's RuntimeScalars and random_nodes() orders; destinations pass through (passes
// keep the outputs' number and order).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/scalar.h"
#include "runtime/tensor.h"
#include "tracer/backend.h"
#include "tracer/graph.h"

namespace kiln::jit::passes {

struct ArgMap {
  tracer::Graph original;                   // the region's graph (first recording)
  tracer::RuntimeScalars original_runtime;  // its promoted scalars
  std::vector<Tensor> constants;            // inputs after the original ones
  std::vector<int32_t> scalars;             // rewritten scalar r is RunArgs::scalars[scalars[r]]
  std::vector<int32_t> random;              // rewritten random node k is RunArgs::random[random[k]]

  // What the mapped RunArgs point into (lives as long as the run).
  struct Storage {
    std::vector<Tensor> inputs;
    std::vector<Scalar> scalars;
    std::vector<tracer::PhiloxWords> random;
  };
  tracer::RunArgs map(const tracer::RunArgs& args, Storage& storage) const;

  // Interprets the original graph with this run's arguments (its scalars and Philox words
  // patched in): KILN_JIT_VALIDATE's reference, so the passes are checked too.
  tracer::InterpretResult run_original(const tracer::RunArgs& args) const;
};

}  // namespace kiln::jit::passes
