// The region cache (DESIGN.md, "Tracer", "Guards"): maps a flushed segment's canonical graph to a
// CachedRegion, the unit that is counted, interpreted with a precomputed plan, and later compiled.
//
// Keys. A region is found by its Shapeless key (graph_hash with ScalarKey::Kinds: ops, attrs,
// edges, dtypes, ranks, devices, size-1 dims, contiguity classes) plus the aliasing of its inputs
// (which inputs share a storage), with a full structural check on a hit. Scalar values are
// compared separately: a scalar that differs from the region's first recording is promoted to a
// runtime input of the region (a learning-rate schedule reuses one region) instead of making a
// new one.
//
// Recompile limit. Regions whose graphs share a Skeleton key (the same ops and edges, with other
// dtypes, layouts or broadcasts) form a family; each new variant or scalar promotion is a
// (re)compile. Past config().jit_recompile_limit (0: no limit) the family stops caching: its
// graphs are interpreted uncached, and one warning names what kept changing.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracer/backend.h"
#include "tracer/graph.h"
#include "tracer/interpreter.h"

namespace kiln::tracer {

struct RegionFamily;

// Held by shared_ptr: a background planning job keeps its region alive even when the cache
// forgets it meanwhile (RegionCache::clear).
class CachedRegion : public std::enable_shared_from_this<CachedRegion> {
 public:
  CachedRegion(uint64_t id, Graph graph, std::vector<uint64_t> encoding,
               std::vector<int32_t> aliasing, RegionFamily* family);

  const uint64_t id;                     // the cache key (Shapeless hash mixed with the aliasing)
  const Graph graph;                     // canonical graph of the first recording
  const std::vector<uint64_t> encoding;  // its Shapeless encoding without scalar values
  const std::vector<int32_t> aliasing;
  const InterpreterPlan plan;
  const std::vector<int32_t> random;  // random_nodes(graph): whose Philox words RunArgs carry
  RegionFamily* const family;

  // Positions of promoted scalars.
  RuntimeScalars runtime_scalars() const;
  // Promotes more scalars; a plan compiled with them baked in is dropped.
  void add_runtime_scalars(const RuntimeScalars& more);

  std::atomic<int64_t> runs{0};
  std::atomic<int64_t> hits{0};
  std::atomic<int64_t> interpret_ns{0};

  // The JIT's plan, once the planner made one (null until then, or after a promotion).
  std::shared_ptr<RegionPlan> jit_plan() const;
  // Installs a plan made for `runtime` scalars and marks the region Ready, unless a scalar was
  // promoted since (the plan bakes it in): then false, and the region stays unplanned.
  bool install_plan(std::shared_ptr<RegionPlan> plan, const RuntimeScalars& runtime);
  // A failed planning attempt for `runtime` scalars: Failed (interpreted for good), unless a
  // promotion reset the state meanwhile (then the next run plans again).
  void planning_failed(const RuntimeScalars& runtime);
  enum class PlanState : uint8_t { None, Queued, Ready, Failed };
  std::atomic<PlanState> plan_state{PlanState::None};

 private:
  mutable std::mutex plan_mu_;
  std::shared_ptr<RegionPlan> jit_plan_;
  RuntimeScalars runtime_scalars_;
};

struct RegionFamily {
  std::vector<CachedRegion*> variants;
  int compiles = 0;  // variants created + scalar promotions
  bool frozen = false;
};

struct CacheLookup {
  // Null: not cached (the family is past its recompile limit). Shared: RegionCache::clear() on
  // another thread never frees a region a flush is running.
  std::shared_ptr<CachedRegion> region;
  bool hit = false;
  bool promoted = false;  // a scalar became a runtime input of `region` on this lookup
};

struct CacheCounters {
  int64_t regions = 0, hits = 0, misses = 0, promotions = 0, uncached = 0;
  int64_t repeats = 0;  // hits found by following the last flush, without a lookup
};

// The graph a caller of lookup_or_adopt() runs: the region's when the lookup made it (it took
// `g`), else `g` (a hit keeps the recording's own scalars; a null region is uncached).
inline const Graph& graph_to_run(const CacheLookup& found, const Graph& g) {
  return found.region != nullptr && !found.hit ? found.region->graph : g;
}

class RegionCache {
 public:
  static RegionCache& instance();

  // `aliasing[i]`: the index of the first earlier input sharing input i's storage, or -1.
  CacheLookup lookup(const Graph& g, std::span<const int32_t> aliasing);
  // As lookup(), but a region made by this lookup (a miss) takes `g`'s contents instead of a
  // copy, leaving `g` empty: the caller runs `graph_to_run(found, g)`. A copy of a large graph
  // (compile_layers' outer graph at 48 layers: ~480 inputs) cost page faults on every first call.
  CacheLookup lookup_or_adopt(Graph& g, std::span<const int32_t> aliasing);

  // Counts a hit on `r` found without a lookup (a segment recognised a repeat of its last flush,
  // tracer/flush_memo.h).
  void count_hit(CachedRegion* r);
  // Changes whenever clear() forgets the regions (so that remembered CachedRegion pointers expire).
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  CacheCounters counters() const;
  // Every region, in creation order (for tests and stats).
  std::vector<const CachedRegion*> regions() const;
  // Forgets every region (tests). Flushes running meanwhile finish with the region they hold.
  void clear();

 private:
  // lookup()'s work; a new region takes *adopt's contents when adopt is set (it is &g).
  CacheLookup find_or_make(const Graph& g, std::span<const int32_t> aliasing, Graph* adopt);

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<CachedRegion>>> by_key_;
  std::unordered_map<uint64_t, std::unique_ptr<RegionFamily>> families_;
  std::vector<const CachedRegion*> order_;
  CacheCounters counters_;
  std::atomic<uint64_t> generation_{0};
  // Encoding buffers that lookups reuse (a fresh vector per flush of a large region cost page
  // faults and copies as it grew); a few, for lookups on several threads at once. Not
  // thread_local: flushes run at thread exit, after such a buffer would be destroyed.
  std::vector<std::vector<uint64_t>> scratch_;
};

// What differs between two graphs of one family, for the recompile-limit warning ("input 2:
// contiguity contiguous -> transposed"); empty if nothing is found.
std::string describe_guard_change(const Graph& before, std::span<const int32_t> aliasing_before,
                                  const Graph& after, std::span<const int32_t> aliasing_after);

}  // namespace kiln::tracer
