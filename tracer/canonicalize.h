// Canonical form of a flushed segment: what the region cache keys and the interpreter runs.
// Nodes whose values reach no output are dropped (dead intermediates are never computed: a dead
// random op already reserved its Philox offsets when it was recorded, so no other draw moves),
// nodes of ops that validate data (kChecksData: an index out of range), and higher-order nodes
// whose bodies hold one, are kept even when dead,
// so that their errors still surface at the sync point; inputs nothing reads are dropped, and
// values are renumbered by definition position: input i is value i, node j is value (#inputs + j).
// Two recordings of the same program therefore give identical graphs, ids included.
#pragma once
#include <cstdint>
#include <vector>

#include "tracer/graph.h"

namespace kiln::tracer {

struct CanonicalGraph {
  Graph graph;
  // For each input of `graph`, the index of the input of the original graph it came from.
  std::vector<int32_t> input_origin;
  // For each node of `graph`, the index of the node of the original graph it came from.
  std::vector<int32_t> node_origin;
};

// Moves the nodes and the inputs' metadata out of `g` (which the caller then clears and reuses;
// a region of 578 inputs copied every input's sizes and strides at each flush). With `keep_inputs`
// (a higher-order op's body, whose inputs are bound by position) no input is dropped.
CanonicalGraph canonicalize(Graph& g, bool keep_inputs = false);

// Whether canonicalize(g, /*keep_inputs=*/true) would give `g` back as it is: every node live
// (or checking data), values numbered by definition position, every input's strides stated.
// Lets a pass pipeline skip a rebuild (a 1000-node graph is 376 KB of nodes) when nothing died.
bool is_canonical_keeping_inputs(const Graph& g);

}  // namespace kiln::tracer
