// The last few distinct flushes of a segment, remembered so that their repeats (the next
// iterations of a loop) cost almost nothing to record and to look up. While a segment records, it
// follows one remembered recording: an op equal to the remembered node at the same position (op,
// input values, metadata, attrs) is not appended to the segment's graph at all, only counted. If
// the whole recording repeats, the flush runs the remembered canonical graph and region, skipping
// canonicalization, encoding and the cache lookup. At the first difference the segment tries the
// other remembered recordings whose first nodes are the ones followed so far; when none goes on,
// it copies the nodes followed so far into its graph and records normally (then it canonicalizes,
// looks up and remembers the flush in place of the least recently used one).
//
// Several are kept because loops often sync more than once per iteration with different work
// between the syncs (a solver that reads a residual and then a step size, a training step that
// reads its gradient norm before it clips and updates, the first iteration that creates the
// state): with one remembered flush, such loops never repeat the last flush and every sync paid
// the whole lookup. The recording to follow first is the one that came after the last flush's
// the last time (each entry predicts its successor), else the last flush's own.
//
// Only what the region cache itself treats as run-time values may differ while following: the
// Philox seed and counter of random ops, and scalars the region already promoted. They are
// patched into the remembered graphs as they are recorded.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "tracer/canonicalize.h"
#include "tracer/region_cache.h"

namespace kiln::tracer {

class FlushMemo {
 public:
  static constexpr int kEntries = 4;

  // Called when a segment starts recording: true when there is a recording to follow.
  bool begin();
  // What begin() would return, without starting anything (a segment that recorded nothing since
  // its last begin() need not begin again unless the answer changed: the cache was cleared).
  bool followable() const;
  // True when the op about to be recorded as node `j` (its output would be value `id`) equals
  // node j of the recording followed (or of another remembered one whose first j nodes are the
  // ones followed: it is followed from then on); its run-time values are then patched in.
  bool follow(size_t j, ValueId id, OpId op, const Attrs& attrs, std::span<const ValueId> inputs,
              const ValueMeta& meta);
  // Which remembered recording is followed (-1: none), and its node j, or null past its end
  // (Segment::known_meta).
  int followed_entry() const { return current_; }
  const Node* node(size_t j) const;
  // Whether the recording followed has a graph input `id` of `t`'s metadata.
  bool input_has_meta(ValueId id, const TensorImpl* t) const;
  // Appends copies of the first `n` nodes of the recording followed to `g` (the segment stops
  // following).
  void copy_nodes(Graph& g, size_t n) const;
  // True when `g` (the segment's inputs and outputs, no nodes) after following `n` nodes is the
  // recording followed whole, and its region is still cached.
  bool completes(const Graph& g, size_t n) const;
  // completes(), or else another remembered recording of exactly the `n` nodes followed
  // completes (the one followed was longer): it becomes the one followed.
  bool completes_any(const Graph& g, size_t n);
  // True when the inputs share storage as the followed recording's did.
  bool same_aliasing(std::span<const int32_t> aliasing) const;
  // The flush ran the recording followed (completes() and same_aliasing() held).
  void ran_followed();

  // Of the recording followed, or the one remember() just took.
  const std::shared_ptr<CachedRegion>& region() const { return at(current_).region; }
  const CanonicalGraph& canonical() const { return at(current_).canon; }

  // Remembers a flush that runs `canon` (canonical()) as `region`, in place of the least
  // recently used recording; a recording with bodies is kept but never followed.
  void remember(Graph raw, CanonicalGraph canon, std::vector<int32_t> aliasing,
                std::shared_ptr<CachedRegion> region);
  // Drops the recording followed (it repeated, but with other aliasing: remember() replaces it).
  void forget();

 private:
  struct Entry {
    Graph raw;
    CanonicalGraph canon;
    std::vector<int32_t> canon_index;  // raw node -> canonical node (-1: dead)
    std::vector<int32_t> aliasing;
    RuntimeScalars runtime;  // the region's promoted scalars (refreshed when followed)
    // Shared: a cache clear on another thread never frees it under a flush that follows it.
    std::shared_ptr<CachedRegion> region;  // null: nothing to follow
    uint64_t generation = 0;               // of the region cache when remembered
    uint64_t used = 0;                     // when it last ran (least recently used goes first)
    int next = -1;                         // the entry whose flush came after this one's
  };
  static bool follow_entry(Entry& e, size_t j, ValueId id, OpId op, const Attrs& attrs,
                           std::span<const ValueId> inputs, const ValueMeta& meta);
  bool valid(int i) const;  // remembered, and its region still cached
  bool start(int i);        // follows entry i from its first node (refreshes its scalars)
  // Whether entry e's first n nodes are the followed entry's first n (as patched while
  // recorded), patching e's run-time values in (switch_to, completes_any).
  bool repeats_followed(Entry& e, size_t n);
  bool switch_to(int i, size_t j, ValueId id, OpId op, const Attrs& attrs,
                 std::span<const ValueId> inputs, const ValueMeta& meta);
  void ran(int i);  // entry i's flush ran: it follows the last one
  const Entry& at(int i) const { return entries_[static_cast<size_t>(i < 0 ? 0 : i)]; }

  std::array<Entry, kEntries> entries_;
  int current_ = -1;  // followed (or just remembered); -1: none
  int last_ = -1;     // the entry of the last flush that ran one; -1: none
  uint64_t clock_ = 0;
};

}  // namespace kiln::tracer
