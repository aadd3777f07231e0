// Scan products (docs/jit.md "Product batches"): a scan (or map) whose body plan multiplies the
// step's slice x_t of a scanned input by an operand made from loop-invariant inputs alone (a
// captured weight, or its transpose: view nodes of it), such as rnn_scan's `linear(x_t, W, b)`,
// computes that product for every step before the loop, as one GEMM over the scanned input's rows
// (stacked_product, product_batch.h: only where it gives each step eager's bits for its own
// product); each step's body run then takes its rows instead of calling BLAS, and runs the
// product's epilogue as usual. Where the scan cannot (the probe's answer, a layout, the size
// cap, a body plan under KILN_JIT_VALIDATE), every step computes its product, as before.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::jit {

class JitPlan;
struct Step;

// A BLAS step of a plan whose left operand is a graph input and whose right operand is a graph
// input or view nodes of one (the candidates; the scan picks those whose left operand is a
// scanned slice and whose right operand is made from a capture).
struct InvariantProduct {
  int32_t step = -1;                 // the BLAS step
  tracer::ValueId product = -1;      // its value
  int32_t left_input = -1;           // the graph input multiplied on the left
  int32_t right_input = -1;          // the graph input the right operand is made from
  std::vector<int32_t> right_nodes;  // the view nodes making it, in order (empty: the input)
};

std::vector<InvariantProduct> find_invariant_products(const tracer::Graph& g,
                                                      const std::vector<Step>& steps);

// Runs scan or map node `n` (inputs `in`: [init..., xs..., captures...], a map without init)
// with the body plan `body`, its candidates' products computed before the loop: the node's
// results, or nothing (nothing run) where no product could be (the caller runs the node as
// usual).
std::optional<std::vector<Tensor>> run_loop_with_products(const tracer::Node& n, JitPlan& body,
                                                          std::span<const Tensor> in);

}  // namespace kiln::jit
