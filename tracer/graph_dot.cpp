#include "tracer/graph_dot.h"

#include <fmt/format.h>

#include <iterator>

#include "tracer/graph_printer.h"

namespace kiln::tracer {

namespace {

// DOT string literal contents: quotes and backslashes escaped, newlines as \n.
std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class DotWriter {
 public:
  std::string out;

  // Writes the statements of one graph; its DOT node names are prefixed with `prefix` so that
  // the value ids of nested subgraphs (numbered on their own) never clash.
  void write(const Graph& g, const std::string& prefix, int depth) {
    const std::string pad(static_cast<size_t>(2 * depth + 2), ' ');
    for (const GraphInput& in : g.inputs) {
      fmt::format_to(std::back_inserter(out), "{}{}v{} [shape=ellipse, label=\"%{}\\n{}\"];\n", pad,
                     prefix, in.id, in.id, escape(format_type(in.meta)));
    }
    for (const Node& n : g.nodes) {
      std::string label =
          fmt::format("{}\n%{}: {}", op_display_name(n.op), n.output, format_type(n.meta));
      if (std::string attrs = format_attrs(n.attrs); !attrs.empty()) label += '\n' + attrs;
      fmt::format_to(std::back_inserter(out), "{}{}v{} [shape=box, label=\"{}\"];\n", pad, prefix,
                     n.output, escape(label));
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        fmt::format_to(std::back_inserter(out), "{}{}v{} -> {}v{}", pad, prefix, n.inputs[k],
                       prefix, n.output);
        if (n.inputs.size() > 1) fmt::format_to(std::back_inserter(out), " [label=\"{}\"]", k);
        out += ";\n";
      }
      for (size_t s = 0; s < n.subgraphs.size(); ++s) {
        const std::string sub = fmt::format("{}n{}s{}_", prefix, n.output, s);
        fmt::format_to(
            std::back_inserter(out),
            "{}subgraph cluster_{} {{\n{}  label=\"{} subgraph {}\";\n{}  style=dashed;\n", pad,
            sub, pad, escape(op_display_name(n.op)), s, pad);
        write(n.subgraphs[s], sub, depth + 1);
        fmt::format_to(std::back_inserter(out), "{}}}\n", pad);
        fmt::format_to(std::back_inserter(out), "{}{}v{} -> {}return [style=dashed, dir=back];\n",
                       pad, prefix, n.output, sub);
      }
    }
    fmt::format_to(std::back_inserter(out), "{}{}return [shape=plaintext, label=\"return\"];\n",
                   pad, prefix);
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      fmt::format_to(std::back_inserter(out), "{}{}v{} -> {}return", pad, prefix, g.outputs[k],
                     prefix);
      if (g.outputs.size() > 1) fmt::format_to(std::back_inserter(out), " [label=\"{}\"]", k);
      out += ";\n";
    }
  }
};

}  // namespace

std::string graph_to_dot(const Graph& g, std::string_view name) {
  DotWriter w;
  w.out = fmt::format("digraph \"{}\" {{\n  node [fontname=\"monospace\"];\n", escape(name));
  w.write(g, "", 0);
  w.out += "}\n";
  return w.out;
}

}  // namespace kiln::tracer
