#include "jit/passes/scatter_select.h"

#include <cmath>

#include "ops/losses.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

bool is_positive_zero(const Scalar& s) {
  return s.to_double() == 0 && !std::signbit(s.to_double());
}

// Whether node j is a scatter_add this pass rewrites (scatter_select.h).
bool rewrites(const PassGraph& pg, size_t j, const std::vector<int32_t>& producer,
              const std::vector<const ValueMeta*>& meta) {
  const Node& n = pg.graph.nodes[j];
  if (n.op != OpId::ScatterAdd || !n.subgraphs.empty() || pg.has_runtime_scalar(j) ||
      n.inputs.size() != 3 || n.meta.device != Device::cpu() || n.meta.dtype == DType::Bool)
    return false;
  const DimVector& out = n.meta.sizes;
  const auto rank = static_cast<int64_t>(out.size());
  if (rank == 0 || (n.attrs.ints[0] != -1 && n.attrs.ints[0] != rank - 1)) return false;
  const int32_t f = producer[static_cast<size_t>(n.inputs[0])];
  if (f < 0) return false;
  const Node& fill = pg.graph.nodes[static_cast<size_t>(f)];
  if (fill.op != OpId::Fill || pg.has_runtime_scalar(static_cast<size_t>(f)) ||
      !is_positive_zero(fill.attrs.scalars[0]) || fill.attrs.dims != out ||
      fill.meta.dtype != n.meta.dtype)
    return false;
  const ValueMeta* index = meta[n.inputs[1]];
  const ValueMeta* src = meta[n.inputs[2]];
  // The index's last dim is 1 in every recording (the key holds size-1 dims).
  return index != nullptr && src != nullptr && index->device == Device::cpu() &&
         src->device == Device::cpu() && src->dtype == n.meta.dtype &&
         index->sizes.size() == out.size() && src->sizes.size() == out.size() &&
         index->sizes.back() == 1;
}

void emit_select(NodeListBuilder& out, const Node& n) {
  const DType t = n.meta.dtype;
  const Device cpu = Device::cpu();
  const DimVector& sizes = n.meta.sizes;
  const int64_t classes = sizes.back();
  const DType cls_dtype = class_index_dtype(t, classes);
  DimVector lines = sizes;
  lines.back() = 1;
  Attrs shape;
  shape.dims = sizes;
  shape.dtype = cls_dtype;
  const ValueId k =
      out.add(OpId::ScatterRowIndex, shape, {n.inputs[1]}, fresh_meta(lines, cls_dtype, cpu));
  const ValueId v =
      out.add(OpId::ScatterRowValue, shape, {n.inputs[2], n.inputs[1]}, fresh_meta(lines, t, cpu));
  const ValueId cls = add_class_indices(out, classes, cls_dtype, cpu);
  const ValueId other = out.add(OpId::Ne, Attrs{}, {cls, k}, fresh_meta(sizes, DType::Bool, cpu));
  Attrs fill0;
  fill0.scalars[0] = is_floating(t) ? Scalar(0.0) : Scalar(int64_t{0});
  out.add(OpId::MaskedFill, fill0, {v, other}, fresh_meta(sizes, t, cpu), n.output);
}

}  // namespace

int scatter_adds_to_selects(PassGraph& pg) {
  const std::vector<const ValueMeta*> meta = pg.metas();
  const std::vector<int32_t> producer = pg.producers();
  std::vector<uint8_t> hit(pg.graph.nodes.size(), 0);
  int count = 0;
  for (size_t j = 0; j < pg.graph.nodes.size(); ++j)
    count += hit[j] = rewrites(pg, j, producer, meta);
  if (count == 0) return 0;
  NodeListBuilder out(pg);
  for (size_t j = 0; j < pg.graph.nodes.size(); ++j) {
    if (hit[j])
      emit_select(out, pg.graph.nodes[j]);
    else
      out.keep(j);
  }
  out.commit();
  return count;
}

}  // namespace kiln::jit::passes
