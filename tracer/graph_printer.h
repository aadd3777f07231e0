// The text form of a Graph: stable (tests compare it as a string, dumps diff cleanly) and
// readable. Example:
//
//   graph(%0: Float32[8, 16], %1: Float32[16]) {
//     %2: Float32[8, 16] = add(%0, %1)
//     %3: Float32[8] = sum(%2) {dims=[1]}
//     return (%3)
//   }
//
// Types: dtype[sizes], then "@cuda:0" off the CPU, then {strides=[..], offset=n} when the
// geometry is not row-major from offset 0 (graph inputs, views). Attributes: only the fields
// that differ from a default-constructed Attrs, in field order; scalars and ints are printed up
// to the last non-default element, scalars with their kind (2, 2.0, true). Subgraphs follow their
// node, indented, as "subgraph i: graph(...) { ... }" with their own value numbering.
#pragma once
#include <string>

#include "runtime/attrs.h"
#include "tracer/graph.h"

namespace kiln::tracer {

std::string print_graph(const Graph& g);

// Pieces of the text form, also used by the DOT export.
std::string format_type(const ValueMeta& m);  // "Float32[8, 16]"
std::string format_attrs(const Attrs& a);     // "{dims=[1], scalars=[2.0]}", or "" if default
std::string format_scalar(const Scalar& s);   // "2", "2.0", "true", "-0.0", "nan"

}  // namespace kiln::tracer
