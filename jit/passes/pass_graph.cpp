#include "jit/passes/pass_graph.h"

#include <cstddef>
#include <utility>

#include "runtime/dispatcher.h"

namespace kiln::jit::passes {

using tracer::ValueId;

PassGraph::PassGraph(const tracer::Graph& g, const tracer::RuntimeScalars& runtime)
    : graph(g), num_original_inputs(static_cast<int32_t>(g.inputs.size())) {
  origin.resize(g.nodes.size());
  for (size_t j = 0; j < g.nodes.size(); ++j) origin[j] = static_cast<int32_t>(j);
  promoted.assign(g.nodes.size(), 0);
  for (const tracer::ScalarPosition& p : runtime) promoted[static_cast<size_t>(p.node)] = 1;
}

std::vector<const tracer::ValueMeta*> PassGraph::metas() const {
  std::vector<const tracer::ValueMeta*> m(static_cast<size_t>(graph.num_values()), nullptr);
  for (const tracer::GraphInput& in : graph.inputs) m[in.id] = &in.meta;
  for (const tracer::Node& n : graph.nodes) m[n.output] = &n.meta;
  return m;
}

std::vector<int32_t> PassGraph::producers() const {
  std::vector<int32_t> p(static_cast<size_t>(graph.num_values()), -1);
  for (size_t j = 0; j < graph.nodes.size(); ++j)
    p[graph.nodes[j].output] = static_cast<int32_t>(j);
  return p;
}

std::vector<std::vector<int32_t>> PassGraph::readers() const {
  std::vector<std::vector<int32_t>> r(static_cast<size_t>(graph.num_values()));
  for (size_t j = 0; j < graph.nodes.size(); ++j)
    for (ValueId v : graph.nodes[j].inputs) r[v].push_back(static_cast<int32_t>(j));
  return r;
}

std::vector<uint8_t> PassGraph::output_flags() const {
  std::vector<uint8_t> o(static_cast<size_t>(graph.num_values()), 0);
  for (ValueId v : graph.outputs) o[v] = 1;
  return o;
}

NodeListBuilder::NodeListBuilder(PassGraph& pg) : pg_(pg), next_(pg.graph.num_values()) {}

void NodeListBuilder::copy_kept() {
  if (copied_) return;
  copied_ = true;
  const std::vector<tracer::Node>& nodes = pg_.graph.nodes;
  nodes_.reserve(nodes.size() + nodes.size() / 8);
  origin_.reserve(nodes.size() + nodes.size() / 8);
  nodes_.assign(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(same_));
  origin_.assign(pg_.origin.begin(), pg_.origin.begin() + static_cast<std::ptrdiff_t>(same_));
}

void NodeListBuilder::keep(size_t j) {
  if (!copied_ && j == same_) {
    ++same_;
    return;
  }
  copy_kept();
  nodes_.push_back(pg_.graph.nodes[j]);
  origin_.push_back(pg_.origin[j]);
}

ValueId NodeListBuilder::add(OpId op, const Attrs& attrs, SmallVector<ValueId, 4> inputs,
                             tracer::ValueMeta meta, ValueId output) {
  tracer::Node n;
  n.op = op;
  n.attrs = attrs;
  n.inputs = std::move(inputs);
  n.output = output >= 0 ? output : next_++;
  n.meta = std::move(meta);
  add(std::move(n));
  return nodes_.back().output;
}

void NodeListBuilder::keep_as(size_t j, tracer::Node n) {
  copy_kept();
  nodes_.push_back(std::move(n));
  origin_.push_back(pg_.origin[j]);
}

void NodeListBuilder::add(tracer::Node n) {
  copy_kept();
  nodes_.push_back(std::move(n));
  origin_.push_back(-1);
}

void NodeListBuilder::commit() {
  if (!copied_ && same_ == pg_.graph.nodes.size()) {  // every node kept, in order: no change
    pg_.graph.set_num_values(next_);
    return;
  }
  copy_kept();  // (the pass dropped the graph's last nodes)
  pg_.graph.nodes = std::move(nodes_);
  pg_.origin = std::move(origin_);
  pg_.graph.set_num_values(next_);
}

tracer::ValueMeta fresh_meta(DimVector sizes, DType dtype, Device device) {
  tracer::ValueMeta m;
  m.sizes = std::move(sizes);
  m.dtype = dtype;
  m.device = device;
  return m;
}

tracer::ValueMeta view_meta(OpId op, const Attrs& attrs, const tracer::ValueMeta& in) {
  DimVector strides = in.strides.empty() ? contiguous_strides(in.sizes) : in.strides;
  const Tensor t(make_ref<TensorImpl>(in.sizes, std::move(strides), in.offset, in.dtype, in.device,
                                      Ref<Storage>{}));
  const Tensor args[] = {t};
  tracer::ValueMeta m;
  op_def(op).meta(OpCall{op, args, attrs}, m);
  return m;
}

void apply_replacements(tracer::Graph& g, const std::vector<ValueId>& repl) {
  for (tracer::Node& n : g.nodes)
    for (ValueId& v : n.inputs)
      while (repl[v] != v) v = repl[v];
}

tracer::ValueId add_class_indices(NodeListBuilder& out, int64_t classes, DType dtype,
                                  Device device) {
  Attrs zero;
  zero.dtype = DType::Int64;
  zero.device = device;
  const tracer::ValueMeta zm = fresh_meta({}, DType::Int64, device);
  const tracer::ValueId z = out.add(OpId::Fill, zero, {}, zm);
  Attrs expand;
  expand.dims = {classes};
  const tracer::ValueId like =
      out.add(OpId::Expand, expand, {z}, view_meta(OpId::Expand, expand, zm));
  Attrs indices;
  indices.dtype = dtype;
  return out.add(OpId::IndicesOf, indices, {like}, fresh_meta({classes}, dtype, device));
}

}  // namespace kiln::jit::passes
