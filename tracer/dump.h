// Dumps for debugging, chosen by KILN_DUMP (config().dump): a comma-separated list of kinds and at
// most one folder, e.g. `KILN_DUMP=code,asm`, `KILN_DUMP=/tmp/d,graph` or `KILN_DUMP=/tmp/d`.
//   graph  every new region: DIR/region-<id>.txt (the text form, tracer/graph_printer.h) and .dot
//   code   every new kernel: its loop IR, DIR/kernel-<hash>.txt
//   asm    every rendering of a kernel: its assembly, DIR/kernel-<hash>-<isa>-<layouts>.s
//   all    the three
// An item that is none of these words is the folder (default: kiln-dump, in the working
// directory); a list with no kind means all kinds, so `KILN_DUMP=DIR` dumps everything to DIR.
// Folders are created as needed.
//
// Dumping is a debugging aid and must never break the user's program: a folder or file that
// cannot be written is reported as a warning on the "tracer" logger, never as an exception.
#pragma once
#include <string>
#include <string_view>

#include "tracer/graph.h"

namespace kiln::tracer {

enum class DumpKind { Graph, Code, Asm };

struct DumpSettings {
  std::string dir;  // empty: dumping is off
  bool graph = false, code = false, assembly = false;
  bool wants(DumpKind k) const {
    return !dir.empty() && (k == DumpKind::Graph ? graph : k == DumpKind::Code ? code : assembly);
  }
};
// The settings a KILN_DUMP value asks for (empty: off).
DumpSettings parse_dump_settings(std::string_view spec);
// The settings of config().dump now (off when the configuration cannot be read).
DumpSettings dump_settings() noexcept;

// Writes the graph dumps when KILN_DUMP asks for graphs; true when both files were written.
bool dump_graph(const Graph& g, std::string_view name);
// Writes the dumps into `dir` regardless of the configuration.
bool dump_graph_to(const Graph& g, std::string_view name, std::string_view dir);

// Writes `text` to DIR/<file_name> when KILN_DUMP asks for `kind` (kernels' loop IR, assembly).
bool dump_text(DumpKind kind, std::string_view file_name, const std::string& text);

// `name` made safe as a file name: characters other than [A-Za-z0-9._-] become '_'.
std::string dump_file_stem(std::string_view name);

}  // namespace kiln::tracer
