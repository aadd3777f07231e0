#include "tracer/flush_memo.h"

#include "tracer/graph_hash.h"

namespace kiln::tracer {

namespace {

bool same_meta(const ValueMeta& a, const ValueMeta& b) {
  return a.sizes == b.sizes && a.dtype == b.dtype && a.device == b.device &&
         a.strides == b.strides && a.offset == b.offset;
}

bool is_runtime(const RuntimeScalars& rs, int32_t node, int32_t index) {
  for (const ScalarPosition& p : rs)
    if (p.node == node && p.index == index) return true;
  return false;
}

}  // namespace

bool FlushMemo::valid(int i) const {
  const Entry& e = entries_[static_cast<size_t>(i)];
  return e.region != nullptr && e.generation == RegionCache::instance().generation();
}

bool FlushMemo::start(int i) {
  if (!valid(i)) return false;  // the cache was cleared (begin() dropped the region)
  Entry& e = entries_[static_cast<size_t>(i)];
  e.runtime = e.region->runtime_scalars();
  current_ = i;
  return true;
}

bool FlushMemo::repeats_followed(Entry& e, size_t n) {
  const Entry& followed = entries_[static_cast<size_t>(current_)];
  if (e.raw.nodes.size() < n) return false;
  e.runtime = e.region->runtime_scalars();
  for (size_t k = 0; k < n; ++k) {
    const Node& node = followed.raw.nodes[k];
    if (!follow_entry(e, k, node.output, node.op, node.attrs, node.inputs, node.meta)) return false;
  }
  return true;
}

bool FlushMemo::begin() {
  current_ = -1;
  for (int i = 0; i < kEntries; ++i)  // a cleared cache's regions go now, not when replaced
    if (!valid(i)) entries_[static_cast<size_t>(i)].region.reset();
  // The recording that came after the last one the last time, else the last one again, else
  // the most recently run.
  if (last_ >= 0) {
    const int next = entries_[static_cast<size_t>(last_)].next;
    if (next >= 0 && start(next)) return true;
    if (start(last_)) return true;
  }
  int best = -1;
  for (int i = 0; i < kEntries; ++i)
    if (valid(i) && (best < 0 || entries_[static_cast<size_t>(i)].used >
                                     entries_[static_cast<size_t>(best)].used))
      best = i;
  return best >= 0 && start(best);
}

bool FlushMemo::followable() const {
  for (int i = 0; i < kEntries; ++i)
    if (valid(i)) return true;
  return false;
}

bool FlushMemo::follow_entry(Entry& e, size_t j, ValueId id, OpId op, const Attrs& attrs,
                             std::span<const ValueId> inputs, const ValueMeta& meta) {
  if (j >= e.raw.nodes.size()) return false;
  Node& n = e.raw.nodes[j];
  if (n.op != op || n.output != id || n.inputs.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)  // a loop: std::equal would call memcmp per op
    if (n.inputs[i] != inputs[i]) return false;
  if (!same_meta(n.meta, meta)) return false;
  const Attrs& was = n.attrs;
  if (was.dims != attrs.dims || was.dtype != attrs.dtype || was.device != attrs.device)
    return false;
  // A random op's Philox seed and counter (ints 0 and 1) are run-time values; nothing else's.
  const bool words_differ = was.ints[0] != attrs.ints[0] || was.ints[1] != attrs.ints[1];
  for (size_t i = 2; i < attrs.ints.size(); ++i)
    if (was.ints[i] != attrs.ints[i]) return false;
  if (words_differ && !(op_def(op).flags & kIsRandom)) return false;
  const int32_t c = e.canon_index[j];
  bool scalars_differ = false;
  for (size_t k = 0; k < attrs.scalars.size(); ++k) {
    if (same_bits(was.scalars[k], attrs.scalars[k])) continue;
    if (was.scalars[k].category() != attrs.scalars[k].category()) return false;
    // A new value of a baked scalar: the cache decides (it may promote it).
    if (c >= 0 && !is_runtime(e.runtime, c, static_cast<int32_t>(k))) return false;
    scalars_differ = true;
  }
  if (scalars_differ || words_differ) {
    n.attrs.scalars = attrs.scalars;
    n.attrs.ints = attrs.ints;
    if (c >= 0) {
      Attrs& canon = e.canon.graph.nodes[c].attrs;
      canon.scalars = attrs.scalars;
      canon.ints = attrs.ints;
    }
  }
  return true;
}

bool FlushMemo::follow(size_t j, ValueId id, OpId op, const Attrs& attrs,
                       std::span<const ValueId> inputs, const ValueMeta& meta) {
  if (current_ < 0) return false;
  if (follow_entry(entries_[static_cast<size_t>(current_)], j, id, op, attrs, inputs, meta))
    return true;
  for (int i = 0; i < kEntries; ++i)
    if (i != current_ && switch_to(i, j, id, op, attrs, inputs, meta)) return true;
  return false;
}

// Entry i goes on where the followed one stopped at node j when its first j nodes are those
// followed so far (the followed entry's nodes, patched as recorded) and node j is the op.
bool FlushMemo::switch_to(int i, size_t j, ValueId id, OpId op, const Attrs& attrs,
                          std::span<const ValueId> inputs, const ValueMeta& meta) {
  if (!valid(i)) return false;
  Entry& e = entries_[static_cast<size_t>(i)];
  if (!repeats_followed(e, j) || !follow_entry(e, j, id, op, attrs, inputs, meta)) return false;
  current_ = i;
  return true;
}

const Node* FlushMemo::node(size_t j) const {
  if (current_ < 0) return nullptr;
  const Graph& raw = entries_[static_cast<size_t>(current_)].raw;
  return j < raw.nodes.size() ? &raw.nodes[j] : nullptr;
}

bool FlushMemo::input_has_meta(ValueId id, const TensorImpl* t) const {
  if (current_ < 0) return false;
  for (const GraphInput& in : entries_[static_cast<size_t>(current_)].raw.inputs) {
    if (in.id != id) continue;
    const ValueMeta& m = in.meta;  // as Graph::add_input(meta_of(t)) stored it
    return m.sizes == t->sizes() && m.strides == t->strides() && m.offset == t->offset() &&
           m.dtype == t->dtype() && m.device == t->device();
  }
  return false;
}

void FlushMemo::copy_nodes(Graph& g, size_t n) const {
  if (current_ < 0) return;
  const Graph& raw = entries_[static_cast<size_t>(current_)].raw;
  g.nodes.insert(g.nodes.end(), raw.nodes.begin(), raw.nodes.begin() + static_cast<ptrdiff_t>(n));
}

bool FlushMemo::completes(const Graph& g, size_t n) const {
  // The cache may have been cleared since begin() (between two flushes of one recording): the
  // remembered region is then freed and must not run.
  if (current_ < 0 || !valid(current_)) return false;
  const Graph& raw = entries_[static_cast<size_t>(current_)].raw;
  if (n != raw.nodes.size() || g.num_values() != raw.num_values() || g.outputs != raw.outputs ||
      g.inputs.size() != raw.inputs.size())
    return false;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (g.inputs[i].id != raw.inputs[i].id || !same_meta(g.inputs[i].meta, raw.inputs[i].meta))
      return false;
  }
  return true;
}

bool FlushMemo::completes_any(const Graph& g, size_t n) {
  if (completes(g, n)) return true;
  if (current_ < 0) return false;
  // A longer recording was followed to this one's end: another remembered recording of exactly
  // the nodes followed (compared again, as switch_to does) may be this one.
  const int was = current_;
  for (int i = 0; i < kEntries; ++i) {
    if (i == was || !valid(i)) continue;
    Entry& e = entries_[static_cast<size_t>(i)];
    if (e.raw.nodes.size() != n || !repeats_followed(e, n)) continue;
    current_ = i;
    if (completes(g, n)) return true;
    current_ = was;
  }
  return false;
}

bool FlushMemo::same_aliasing(std::span<const int32_t> aliasing) const {
  const std::vector<int32_t>& was = entries_[static_cast<size_t>(current_)].aliasing;
  return std::equal(aliasing.begin(), aliasing.end(), was.begin(), was.end());
}

void FlushMemo::ran(int i) {
  if (last_ >= 0) entries_[static_cast<size_t>(last_)].next = i;
  last_ = i;
  entries_[static_cast<size_t>(i)].used = ++clock_;
}

void FlushMemo::ran_followed() {
  if (current_ >= 0) ran(current_);
}

void FlushMemo::forget() {
  if (current_ >= 0) entries_[static_cast<size_t>(current_)].region.reset();
}

void FlushMemo::remember(Graph raw, CanonicalGraph canon, std::vector<int32_t> aliasing,
                         std::shared_ptr<CachedRegion> region) {
  int slot = 0;  // one that holds nothing to follow, else the least recently run
  for (int i = 0; i < kEntries; ++i) {
    if (!valid(i)) {
      slot = i;
      break;
    }
    if (entries_[static_cast<size_t>(i)].used < entries_[static_cast<size_t>(slot)].used) slot = i;
  }
  for (Entry& e : entries_)  // its successor is forgotten with it
    if (&e - entries_.data() != slot && e.next == slot) e.next = -1;
  Entry& e = entries_[static_cast<size_t>(slot)];
  e.raw = std::move(raw);
  e.canon = std::move(canon);  // canonical() is what the flush runs, remembered or not
  e.aliasing = std::move(aliasing);
  e.region.reset();
  e.next = -1;
  current_ = slot;
  ran(slot);
  for (const Node& n : e.raw.nodes)
    if (!n.subgraphs.empty()) return;  // bodies are not compared node for node: never followed
  e.canon_index.assign(e.raw.nodes.size(), -1);
  for (size_t c = 0; c < e.canon.node_origin.size(); ++c)
    e.canon_index[e.canon.node_origin[c]] = static_cast<int32_t>(c);
  e.region = std::move(region);
  e.generation = RegionCache::instance().generation();
}

}  // namespace kiln::tracer
