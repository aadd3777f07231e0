// The last flush of a segment, remembered so that its repeat (the next iteration of a training
// loop) costs almost nothing to record and to look up. While a segment records, it follows the
// remembered recording: an op equal to the remembered node at the same position (op, input
// values, metadata, attrs) is not appended to the segment's graph at all, only counted. If the
// whole recording repeats, the flush runs the remembered canonical graph and region, skipping
// canonicalization, encoding and the cache lookup. At the first difference the segment copies the
// nodes followed so far into its graph and goes on recording normally (then it canonicalizes,
// looks up and remembers again).
//
// Only what the region cache itself treats as run-time values may differ while following: the
// Philox seed and counter of random ops, and scalars the region already promoted. They are
// patched into the remembered graphs as they are recorded.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "tracer/canonicalize.h"
#include "tracer/region_cache.h"

namespace kiln::tracer {

class FlushMemo {
 public:
  // Called when a segment starts recording: true when there is a recording to follow.
  bool begin();
  // What begin() would return, without starting anything (a segment that recorded nothing since
  // its last begin() need not begin again unless the answer changed: the cache was cleared).
  bool followable() const;
  // True when the op about to be recorded as node `j` (its output would be value `id`) equals
  // the remembered node j; its run-time values are then patched in.
  bool follow(size_t j, ValueId id, OpId op, const Attrs& attrs, std::span<const ValueId> inputs,
              const ValueMeta& meta);
  // Appends copies of the first `n` remembered nodes to `g` (the segment stops following).
  void copy_nodes(Graph& g, size_t n) const;
  // True when `g` (the segment's inputs and outputs, no nodes) after following `n` nodes is the
  // remembered recording whole, and its region is still cached.
  bool completes(const Graph& g, size_t n) const;
  // True when the inputs share storage as the remembered ones did.
  bool same_aliasing(std::span<const int32_t> aliasing) const;

  const std::shared_ptr<CachedRegion>& region() const { return region_; }
  const CanonicalGraph& canonical() const { return canon_; }

  // Remembers a flush that runs `canon` (canonical()) as `region`; a recording with bodies is
  // kept but never followed.
  void remember(Graph raw, CanonicalGraph canon, std::vector<int32_t> aliasing,
                std::shared_ptr<CachedRegion> region);
  void forget() { region_.reset(); }

 private:
  Graph raw_;
  CanonicalGraph canon_;
  std::vector<int32_t> canon_index_;  // raw node -> canonical node (-1: dead)
  std::vector<int32_t> aliasing_;
  RuntimeScalars runtime_;  // the region's promoted scalars (refreshed by begin())
  // Shared: a cache clear on another thread never frees it under a flush that follows it.
  std::shared_ptr<CachedRegion> region_;  // null: nothing remembered
  uint64_t generation_ = 0;               // of the region cache when remembered
};

}  // namespace kiln::tracer
