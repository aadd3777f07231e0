#include "tracer/graph_printer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>

namespace kiln::tracer {

namespace {

template <class T, size_t N>
std::string int_list(const SmallVector<T, N>& v) {
  return fmt::format("[{}]", fmt::join(v.begin(), v.end(), ", "));
}

void print_graph_into(const Graph& g, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  out += "graph(";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (i > 0) out += ", ";
    fmt::format_to(std::back_inserter(out), "%{}: {}", g.inputs[i].id,
                   format_type(g.inputs[i].meta));
  }
  out += ") {\n";
  for (const Node& n : g.nodes) {
    fmt::format_to(std::back_inserter(out), "{}  %{}: {} = {}(", pad, n.output, format_type(n.meta),
                   op_display_name(n.op));
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      fmt::format_to(std::back_inserter(out), "{}%{}", k > 0 ? ", " : "", n.inputs[k]);
    }
    out += ')';
    if (std::string attrs = format_attrs(n.attrs); !attrs.empty()) out += ' ' + attrs;
    out += '\n';
    for (size_t s = 0; s < n.subgraphs.size(); ++s) {
      fmt::format_to(std::back_inserter(out), "{}    subgraph {}: ", pad, s);
      print_graph_into(n.subgraphs[s], indent + 4, out);
    }
  }
  out += pad + "  return (";
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "{}%{}", k > 0 ? ", " : "", g.outputs[k]);
  }
  out += ")\n" + pad + "}\n";
}

}  // namespace

std::string format_scalar(const Scalar& s) {
  switch (s.category()) {
    case DTypeCategory::Bool:
      return s.to<bool>() ? "true" : "false";
    case DTypeCategory::Integral:
      return std::to_string(s.to_int());
    case DTypeCategory::Floating:
      break;
  }
  // Shortest round-trip form, with ".0" added where it would read as an integer.
  std::string text = fmt::format("{}", s.to_double());
  if (text.find_first_of(".eni") == std::string::npos) text += ".0";
  return text;
}

std::string format_type(const ValueMeta& m) {
  std::string out = fmt::format("{}{}", dtype_name(m.dtype), int_list(m.sizes));
  if (m.device != Device::cpu()) out += '@' + m.device.str();
  const bool odd_strides = !m.strides.empty() && m.strides != contiguous_strides(m.sizes);
  if (odd_strides && m.offset != 0) {
    out += fmt::format("{{strides={}, offset={}}}", int_list(m.strides), m.offset);
  } else if (odd_strides) {
    out += fmt::format("{{strides={}}}", int_list(m.strides));
  } else if (m.offset != 0) {
    out += fmt::format("{{offset={}}}", m.offset);
  }
  return out;
}

std::string format_attrs(const Attrs& a) {
  const Attrs def{};
  std::string out;
  auto field = [&](std::string_view name, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{}{}={}", out.empty() ? "{" : ", ", name, value);
  };
  if (!a.dims.empty()) field("dims", int_list(a.dims));
  // Arrays are printed up to their last non-default element.
  size_t nscalars = a.scalars.size();
  while (nscalars > 0 && a.scalars[nscalars - 1] == def.scalars[nscalars - 1]) --nscalars;
  if (nscalars > 0) {
    std::string list = "[";
    for (size_t i = 0; i < nscalars; ++i) list += (i > 0 ? ", " : "") + format_scalar(a.scalars[i]);
    field("scalars", list + "]");
  }
  size_t nints = a.ints.size();
  while (nints > 0 && a.ints[nints - 1] == def.ints[nints - 1]) --nints;
  if (nints > 0) {
    field("ints", fmt::format("[{}]", fmt::join(a.ints.begin(), a.ints.begin() + nints, ", ")));
  }
  if (a.dtype != def.dtype) field("dtype", std::string(dtype_name(a.dtype)));
  if (a.device != def.device) field("device", a.device.str());
  if (!out.empty()) out += '}';
  return out;
}

std::string print_graph(const Graph& g) {
  std::string out;
  print_graph_into(g, 0, out);
  return out;
}

}  // namespace kiln::tracer
