#include "tracer/graph.h"

#include <cctype>

#include "runtime/error.h"

namespace kiln::tracer {

std::string op_display_name(OpId op) {
  if (static_cast<int>(op) >= kNumOps) {
    return "op#" + std::to_string(static_cast<int>(op));
  }
  std::string out;
  for (const char* c = op_name(op); *c; ++c) {
    const auto ch = static_cast<unsigned char>(*c);
    if (std::isupper(ch)) {
      if (!out.empty()) out += '_';
      out += static_cast<char>(std::tolower(ch));
    } else {
      out += *c;
    }
  }
  return out;
}

ValueMeta meta_of(const TensorImpl* t) {
  ValueMeta m;
  m.sizes = t->sizes();
  m.dtype = t->dtype();
  m.device = t->device();
  m.strides = t->strides();
  m.offset = t->offset();
  return m;
}

ValueId Graph::add_input(ValueMeta meta) {
  if (meta.strides.empty() && !meta.sizes.empty()) meta.strides = contiguous_strides(meta.sizes);
  const ValueId id = next_value_++;
  inputs.push_back(GraphInput{id, std::move(meta)});
  return id;
}

Subgraphs::Subgraphs(std::vector<Graph> bodies) {
  if (bodies.empty()) return;
  auto list = std::make_shared<SubgraphList>();
  const size_t n = bodies.size() * kKeyKinds;
  list->ids = std::make_unique<std::atomic<uint64_t>[]>(n);  // value-initialized: 0, no id
  list->graphs = std::move(bodies);
  list_ = std::move(list);
}

Subgraphs::Subgraphs(std::initializer_list<Graph> bodies) : Subgraphs(std::vector<Graph>(bodies)) {}

void Subgraphs::push_back(Graph body) {
  std::vector<Graph> bodies = list_ ? list_->graphs : std::vector<Graph>{};
  bodies.push_back(std::move(body));
  *this = Subgraphs(std::move(bodies));
}

ValueId Graph::add_input(const DimVector& sizes, DType dtype, Device device) {
  ValueMeta meta;
  meta.sizes = sizes;
  meta.dtype = dtype;
  meta.device = device;
  return add_input(std::move(meta));
}

ValueId Graph::add_node(OpId op, const Attrs& attrs, std::span<const ValueId> ins, ValueMeta meta,
                        Subgraphs subgraphs) {
  Node& n = nodes.emplace_back();
  n.op = op;
  n.attrs = attrs;
  n.inputs.assign(ins.begin(), ins.end());
  n.output = next_value_++;
  n.meta = std::move(meta);
  n.subgraphs = std::move(subgraphs);
  return n.output;
}

void Graph::set_outputs(std::span<const ValueId> outs) { outputs.assign(outs.begin(), outs.end()); }

const ValueMeta& Graph::meta(ValueId id) const {
  for (const GraphInput& in : inputs) {
    if (in.id == id) return in.meta;
  }
  for (const Node& n : nodes) {
    if (n.output == id) return n.meta;
  }
  fail("graph: value %{} is not defined in this graph", id);
}

namespace {

// Messages are only formatted on failure (KILN_CHECK evaluates its arguments lazily), so a
// successful verify() allocates nothing but its definition table.
void check_meta(const ValueMeta& m, ValueId id, const std::string& context, const auto& what) {
  for (int64_t s : m.sizes) {
    KILN_CHECK(s >= 0, "graph verify{}: {} (%{}) has a negative size ({})", context, what(), id, s);
  }
  KILN_CHECK(m.strides.empty() || m.strides.size() == m.sizes.size(),
             "graph verify{}: {} (%{}) has {} sizes but {} strides", context, what(), id,
             m.sizes.size(), m.strides.size());
}

void verify_graph(const Graph& g, const std::string& context) {
  constexpr int32_t kUndefined = -1;
  const int32_t nvalues = g.num_values();
  const auto ninputs = static_cast<int32_t>(g.inputs.size());
  auto position_name = [&](int32_t pos) {
    return pos < ninputs ? fmt::format("input {}", pos) : fmt::format("node {}", pos - ninputs);
  };
  // Where each value is defined: input i at position i, node j at position ninputs + j.
  std::vector<int32_t> def_at(static_cast<size_t>(nvalues), kUndefined);
  auto define = [&](ValueId id, int32_t pos) {
    KILN_CHECK(id >= 0 && id < nvalues,
               "graph verify{}: {} defines %{}, which is not a valid id (the graph has {} values)",
               context, position_name(pos), id, nvalues);
    KILN_CHECK(def_at[id] == kUndefined, "graph verify{}: {} redefines %{} (already defined at {})",
               context, position_name(pos), id, position_name(def_at[id]));
    def_at[id] = pos;
  };
  for (int32_t i = 0; i < ninputs; ++i) {
    const GraphInput& in = g.inputs[i];
    define(in.id, i);
    check_meta(in.meta, in.id, context, [&] { return position_name(i); });
    KILN_CHECK(in.meta.strides.size() == in.meta.sizes.size(),
               "graph verify{}: input {} (%{}) must state its strides", context, i, in.id);
  }
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    define(g.nodes[j].output, ninputs + static_cast<int32_t>(j));
  }
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    KILN_CHECK(static_cast<int>(n.op) < kNumOps, "graph verify{}: node {} has an invalid op id {}",
               context, j, static_cast<int>(n.op));
    auto what = [&] { return fmt::format("node {} ({})", j, op_display_name(n.op)); };
    const int32_t pos = ninputs + static_cast<int32_t>(j);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueId v = n.inputs[k];
      KILN_CHECK(v >= 0 && v < nvalues,
                 "graph verify{}: {} input {} is %{}, which is not a valid id (the graph has {} "
                 "values)",
                 context, what(), k, v, nvalues);
      KILN_CHECK(def_at[v] != kUndefined,
                 "graph verify{}: {} input {} is %{}, which is never defined", context, what(), k,
                 v);
      KILN_CHECK(def_at[v] < pos,
                 "graph verify{}: {} input {} is %{}, which is used before its definition ({})",
                 context, what(), k, v, position_name(def_at[v]));
    }
    check_meta(n.meta, n.output, context, [&] { return what() + " output"; });
    for (size_t s = 0; s < n.subgraphs.size(); ++s) {
      verify_graph(n.subgraphs[s], fmt::format("{} (in subgraph {} of {})", context, s, what()));
    }
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ValueId v = g.outputs[k];
    KILN_CHECK(v >= 0 && v < nvalues && def_at[v] != kUndefined,
               "graph verify{}: output {} is %{}, which is not defined in the graph", context, k,
               v);
  }
}

}  // namespace

void Graph::verify() const { verify_graph(*this, ""); }

}  // namespace kiln::tracer
