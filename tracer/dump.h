// Graph dumps for debugging: KILN_DUMP=DIR (config().dump) names a folder, and every
// dump_graph(g, name) writes DIR/<name>.txt (the text form, tracer/graph_printer.h) and
// DIR/<name>.dot (Graphviz, tracer/graph_dot.h) there, creating the folder as needed. The same
// folder later receives generated code and assembly, each kind under its own file suffix.
//
// Dumping is a debugging aid and must never break the user's program: a folder or file that
// cannot be written is reported as a warning on the "tracer" logger, never as an exception.
#pragma once
#include <string>
#include <string_view>

#include "tracer/graph.h"

namespace kiln::tracer {

// Writes the dumps when config().dump is set; returns true when both files were written.
bool dump_graph(const Graph& g, std::string_view name);
// Writes the dumps into `dir` regardless of the configuration.
bool dump_graph_to(const Graph& g, std::string_view name, std::string_view dir);

// Writes `text` to DIR/<file_name> when config().dump is set (kernels' loop IR and assembly).
bool dump_text(std::string_view file_name, const std::string& text);

// `name` made safe as a file name: characters other than [A-Za-z0-9._-] become '_'.
std::string dump_file_stem(std::string_view name);

}  // namespace kiln::tracer
