// Graphviz DOT export of a Graph (`dot -Tsvg g.dot -o g.svg`): graph inputs are ellipses, nodes
// are boxes labelled with the op, its output value and type, edges carry values from their
// definition to their uses (labelled with the argument position when an op has several), and the
// outputs meet in one "return" node. Subgraphs are drawn as clusters next to their owner node,
// with a dashed edge from the owner.
#pragma once
#include <string>
#include <string_view>

#include "tracer/graph.h"

namespace kiln::tracer {

std::string graph_to_dot(const Graph& g, std::string_view name = "graph");

}  // namespace kiln::tracer
