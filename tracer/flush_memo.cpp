#include "tracer/flush_memo.h"

#include <bit>

#include "tracer/graph_hash.h"

namespace kiln::tracer {

namespace {

bool same_meta(const ValueMeta& a, const ValueMeta& b) {
  return a.sizes == b.sizes && a.dtype == b.dtype && a.device == b.device &&
         a.strides == b.strides && a.offset == b.offset;
}

bool same_scalar_bits(const Scalar& a, const Scalar& b) {
  if (a.category() != b.category()) return false;
  return a.is_floating()
             ? std::bit_cast<uint64_t>(a.to_double()) == std::bit_cast<uint64_t>(b.to_double())
             : a.to_int() == b.to_int();
}

bool is_runtime(const RuntimeScalars& rs, int32_t node, int32_t index) {
  for (const ScalarPosition& p : rs)
    if (p.node == node && p.index == index) return true;
  return false;
}

}  // namespace

bool FlushMemo::begin() {
  if (region_ == nullptr) return false;
  if (generation_ != RegionCache::instance().generation()) {  // the cache was cleared
    region_.reset();
    return false;
  }
  runtime_ = region_->runtime_scalars();
  return true;
}

bool FlushMemo::followable() const {
  return region_ != nullptr && generation_ == RegionCache::instance().generation();
}

bool FlushMemo::follow(size_t j, ValueId id, OpId op, const Attrs& attrs,
                       std::span<const ValueId> inputs, const ValueMeta& meta) {
  if (j >= raw_.nodes.size()) return false;
  Node& n = raw_.nodes[j];
  if (n.op != op || n.output != id || n.inputs.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)  // a loop: std::equal would call memcmp per op
    if (n.inputs[i] != inputs[i]) return false;
  if (!same_meta(n.meta, meta)) return false;
  const Attrs& was = n.attrs;
  if (was.dims != attrs.dims || was.dtype != attrs.dtype || was.device != attrs.device)
    return false;
  const bool random = op_def(op).flags & kIsRandom;
  for (size_t i = random ? 2 : 0; i < attrs.ints.size(); ++i)
    if (was.ints[i] != attrs.ints[i]) return false;
  const int32_t c = canon_index_[j];
  bool scalars_differ = false;
  for (size_t k = 0; k < attrs.scalars.size(); ++k) {
    if (same_scalar_bits(was.scalars[k], attrs.scalars[k])) continue;
    if (was.scalars[k].category() != attrs.scalars[k].category()) return false;
    // A new value of a baked scalar: the cache decides (it may promote it).
    if (c >= 0 && !is_runtime(runtime_, c, static_cast<int32_t>(k))) return false;
    scalars_differ = true;
  }
  if (scalars_differ || random) {
    n.attrs.scalars = attrs.scalars;
    n.attrs.ints = attrs.ints;
    if (c >= 0) {
      Attrs& canon = canon_.graph.nodes[c].attrs;
      canon.scalars = attrs.scalars;
      canon.ints = attrs.ints;
    }
  }
  return true;
}

void FlushMemo::copy_nodes(Graph& g, size_t n) const {
  g.nodes.insert(g.nodes.end(), raw_.nodes.begin(), raw_.nodes.begin() + static_cast<ptrdiff_t>(n));
}

bool FlushMemo::completes(const Graph& g, size_t n) const {
  // The cache may have been cleared since begin() (between two flushes of one recording): the
  // remembered region is then freed and must not run.
  if (region_ == nullptr || generation_ != RegionCache::instance().generation()) return false;
  if (n != raw_.nodes.size() || g.num_values() != raw_.num_values() || g.outputs != raw_.outputs ||
      g.inputs.size() != raw_.inputs.size())
    return false;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (g.inputs[i].id != raw_.inputs[i].id || !same_meta(g.inputs[i].meta, raw_.inputs[i].meta))
      return false;
  }
  return true;
}

bool FlushMemo::same_aliasing(std::span<const int32_t> aliasing) const {
  return std::equal(aliasing.begin(), aliasing.end(), aliasing_.begin(), aliasing_.end());
}

void FlushMemo::remember(Graph raw, CanonicalGraph canon, std::vector<int32_t> aliasing,
                         std::shared_ptr<CachedRegion> region) {
  raw_ = std::move(raw);
  canon_ = std::move(canon);  // canonical() is what the flush runs, remembered or not
  aliasing_ = std::move(aliasing);
  region_.reset();
  for (const Node& n : raw_.nodes)
    if (!n.subgraphs.empty()) return;  // bodies are not compared node for node: never followed
  canon_index_.assign(raw_.nodes.size(), -1);
  for (size_t c = 0; c < canon_.node_origin.size(); ++c)
    canon_index_[canon_.node_origin[c]] = static_cast<int32_t>(c);
  region_ = std::move(region);
  generation_ = RegionCache::instance().generation();
}

}  // namespace kiln::tracer
