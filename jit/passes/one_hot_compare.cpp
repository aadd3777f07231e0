#include "jit/passes/one_hot_compare.h"

#include <limits>

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

bool rewrites(const PassGraph& pg, size_t j, const std::vector<const ValueMeta*>& meta) {
  const Node& n = pg.graph.nodes[j];
  if (n.op != OpId::OneHot || !n.subgraphs.empty() || pg.has_runtime_scalar(j) ||
      n.inputs.size() != 1 || n.meta.device != Device::cpu() || n.attrs.ints[0] <= 0)
    return false;
  const ValueMeta* t = meta[n.inputs[0]];
  return t != nullptr && t->device == Device::cpu() && t->dtype == DType::Int64;
}

void emit_compare(NodeListBuilder& out, const Node& n, const ValueMeta& t) {
  const Device cpu = Device::cpu();
  const int64_t classes = n.attrs.ints[0];
  const DType cls_dtype =
      classes <= std::numeric_limits<int32_t>::max() ? DType::Int32 : DType::Int64;
  DimVector lines = t.sizes;
  lines.push_back(1);
  Attrs check = n.attrs;
  check.dtype = cls_dtype;
  const ValueId k =
      out.add(OpId::OneHotClass, check, {n.inputs[0]}, fresh_meta(lines, cls_dtype, cpu));
  const ValueId cls = add_class_indices(out, classes, cls_dtype, cpu);
  const ValueId eq =
      out.add(OpId::Eq, Attrs{}, {cls, k}, fresh_meta(n.meta.sizes, DType::Bool, cpu));
  Attrs cast;
  cast.dtype = DType::Int64;
  out.add(OpId::Cast, cast, {eq}, fresh_meta(n.meta.sizes, DType::Int64, cpu), n.output);
}

}  // namespace

int one_hots_to_compares(PassGraph& pg) {
  const std::vector<const ValueMeta*> meta = pg.metas();
  std::vector<uint8_t> hit(pg.graph.nodes.size(), 0);
  int count = 0;
  for (size_t j = 0; j < pg.graph.nodes.size(); ++j) count += hit[j] = rewrites(pg, j, meta);
  if (count == 0) return 0;
  NodeListBuilder out(pg);
  for (size_t j = 0; j < pg.graph.nodes.size(); ++j) {
    if (hit[j])
      emit_compare(out, pg.graph.nodes[j], *meta[pg.graph.nodes[j].inputs[0]]);
    else
      out.keep(j);
  }
  out.commit();
  return count;
}

}  // namespace kiln::jit::passes
