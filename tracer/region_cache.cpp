#include "tracer/region_cache.h"

#include <fmt/format.h>

#include "runtime/config.h"
#include "runtime/logging.h"
#include "tracer/graph_hash.h"

namespace kiln::tracer {

namespace {

// Regions of one or two ops are exempt from the recompile limit: they come from programs that
// sync after nearly every op, cost next to nothing to compile, and would reach the limit just by
// meeting each layout once.
constexpr size_t kMinLimitedNodes = 3;

uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t aliasing_hash(std::span<const int32_t> aliasing) {
  uint64_t h = aliasing.size();
  for (int32_t a : aliasing) h = mix(h, static_cast<uint64_t>(static_cast<int64_t>(a)));
  return h;
}

bool is_runtime(const RuntimeScalars& rs, int32_t node, int32_t index) {  // rs is short
  for (const ScalarPosition& p : rs)
    if (p.node == node && p.index == index) return true;
  return false;
}

// Scalar positions where `g` differs from the region's recording and that are still baked.
RuntimeScalars new_runtime_scalars(const CachedRegion& r, const Graph& g) {
  RuntimeScalars out;
  const RuntimeScalars known = r.runtime_scalars();
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const auto& a = r.graph.nodes[j].attrs.scalars;
    const auto& b = g.nodes[j].attrs.scalars;
    for (size_t k = 0; k < a.size(); ++k) {
      const auto node = static_cast<int32_t>(j), index = static_cast<int32_t>(k);
      if (!same_bits(a[k], b[k]) && !is_runtime(known, node, index)) out.push_back({node, index});
    }
  }
  return out;
}

std::string size1_pattern(const DimVector& sizes) {
  std::string s;
  for (int64_t d : sizes) s += d == 1 ? '1' : 'n';
  return "[" + s + "]";
}

std::string describe_meta_change(const std::string& what, const ValueMeta& a, const ValueMeta& b,
                                 bool has_layout) {
  if (a.dtype != b.dtype) return fmt::format("{}: dtype {} -> {}", what, a.dtype, b.dtype);
  if (a.device != b.device) return fmt::format("{}: device {} -> {}", what, a.device, b.device);
  if (a.sizes.size() != b.sizes.size())
    return fmt::format("{}: rank {} -> {}", what, a.sizes.size(), b.sizes.size());
  if (size1_pattern(a.sizes) != size1_pattern(b.sizes))
    return fmt::format("{}: size-1 (broadcast) dims {} -> {}", what, size1_pattern(a.sizes),
                       size1_pattern(b.sizes));
  if (has_layout) {
    Contiguity ca = contiguity_class(a.sizes, a.strides), cb = contiguity_class(b.sizes, b.strides);
    if (ca != cb)
      return fmt::format("{}: layout {} -> {}", what, contiguity_name(ca), contiguity_name(cb));
  }
  return {};
}

}  // namespace

CachedRegion::CachedRegion(uint64_t id_, Graph graph_, std::vector<uint64_t> encoding_,
                           std::vector<int32_t> aliasing_, RegionFamily* family_)
    : id(id_),
      graph(std::move(graph_)),
      encoding(std::move(encoding_)),
      aliasing(std::move(aliasing_)),
      plan(plan_interpreter(graph)),
      random(random_nodes(graph)),
      family(family_) {}

std::shared_ptr<RegionPlan> CachedRegion::jit_plan() const {
  std::lock_guard lock(plan_mu_);
  return jit_plan_;
}

bool CachedRegion::install_plan(std::shared_ptr<RegionPlan> plan, const RuntimeScalars& runtime) {
  std::lock_guard lock(plan_mu_);
  if (runtime.size() != runtime_scalars_.size()) return false;  // promotions only add
  jit_plan_ = std::move(plan);
  plan_state.store(PlanState::Ready);
  return true;
}

void CachedRegion::planning_failed(const RuntimeScalars& runtime) {
  std::lock_guard lock(plan_mu_);
  // A promotion since the attempt reset the state to None: leave it so, the next run replans.
  if (runtime.size() == runtime_scalars_.size()) plan_state.store(PlanState::Failed);
}

RuntimeScalars CachedRegion::runtime_scalars() const {
  std::lock_guard lock(plan_mu_);
  return runtime_scalars_;
}

void CachedRegion::add_runtime_scalars(const RuntimeScalars& more) {
  std::lock_guard lock(plan_mu_);
  runtime_scalars_.insert(runtime_scalars_.end(), more.begin(), more.end());
  jit_plan_.reset();
  plan_state.store(PlanState::None);
}

std::string describe_guard_change(const Graph& before, std::span<const int32_t> aliasing_before,
                                  const Graph& after, std::span<const int32_t> aliasing_after) {
  const size_t ni = std::min(before.inputs.size(), after.inputs.size());
  for (size_t i = 0; i < ni; ++i) {
    std::string d = describe_meta_change(fmt::format("input {}", i), before.inputs[i].meta,
                                         after.inputs[i].meta, /*has_layout=*/true);
    if (!d.empty()) return d;
  }
  if (!std::equal(aliasing_before.begin(), aliasing_before.end(), aliasing_after.begin(),
                  aliasing_after.end()))
    return "which inputs share storage (aliasing)";
  const size_t nn = std::min(before.nodes.size(), after.nodes.size());
  for (size_t j = 0; j < nn; ++j) {
    const Node& a = before.nodes[j];
    const Node& b = after.nodes[j];
    std::string what = fmt::format("node {} ({})", j, op_display_name(a.op));
    std::string d = describe_meta_change(what, a.meta, b.meta, !a.meta.strides.empty());
    if (!d.empty()) return d;
    if (a.attrs.dims != b.attrs.dims)
      return fmt::format("{}: attribute shape {} -> {}", what, shape_str(a.attrs.dims),
                         shape_str(b.attrs.dims));
    for (size_t k = 0; k < a.attrs.ints.size(); ++k) {
      if (a.attrs.ints[k] != b.attrs.ints[k] && !is_philox_attr(a.op, k))
        return fmt::format("{}: integer attribute {} {} -> {}", what, k, a.attrs.ints[k],
                           b.attrs.ints[k]);
    }
    for (size_t k = 0; k < a.attrs.scalars.size(); ++k) {
      if (!same_bits(a.attrs.scalars[k], b.attrs.scalars[k]))
        return fmt::format("{}: scalar {} {} -> {}", what, k, a.attrs.scalars[k].to_double(),
                           b.attrs.scalars[k].to_double());
    }
  }
  return {};
}

RegionCache& RegionCache::instance() {
  static RegionCache* cache = new RegionCache();  // never destroyed: flushes run at thread exit
  return *cache;
}

CacheLookup RegionCache::lookup(const Graph& g, std::span<const int32_t> aliasing) {
  return find_or_make(g, aliasing, nullptr);
}

CacheLookup RegionCache::lookup_or_adopt(Graph& g, std::span<const int32_t> aliasing) {
  return find_or_make(g, aliasing, &g);
}

CacheLookup RegionCache::find_or_make(const Graph& g, std::span<const int32_t> aliasing,
                                      Graph* adopt) {
  std::vector<uint64_t> words;  // a reused buffer (scratch_; a new region keeps a copy)
  {
    std::lock_guard lock(mu_);
    if (!scratch_.empty()) {
      words = std::move(scratch_.back());
      scratch_.pop_back();
    }
  }
  encode_graph_into(g, HashMode::Shapeless, ScalarKey::Kinds, words);
  const uint64_t key = mix(hash_encoding(words), aliasing_hash(aliasing));
  const int limit = config().jit_recompile_limit;
  std::lock_guard lock(mu_);
  struct GiveBack {  // on every return, with mu_ still held
    std::vector<std::vector<uint64_t>>& pool;
    std::vector<uint64_t>& words;
    ~GiveBack() {
      if (pool.size() < 4) pool.push_back(std::move(words));
    }
  } give_back{scratch_, words};
  auto over_limit = [&](RegionFamily& f) {
    if (limit == 0 || f.compiles < limit || g.nodes.size() < kMinLimitedNodes) return false;
    if (!f.frozen) {
      f.frozen = true;
      const CachedRegion* last = f.variants.empty() ? nullptr : f.variants.back();
      std::string change =
          last ? describe_guard_change(last->graph, last->aliasing, g, aliasing) : std::string();
      KILN_WARN(Tracer,
                "a region of {} ops reached {} variants and scalar promotions "
                "(KILN_JIT_RECOMPILE_LIMIT); what kept changing: {}. New variants of it are "
                "interpreted uncached from now on.",
                g.nodes.size(), f.compiles, change.empty() ? "its guards" : change);
    }
    ++counters_.uncached;
    return true;
  };

  auto& bucket = by_key_[key];
  for (auto& r : bucket) {
    if (!std::equal(r->aliasing.begin(), r->aliasing.end(), aliasing.begin(), aliasing.end()))
      continue;
    if (r->encoding != words) continue;  // the full structural check: never trust the hash
    RuntimeScalars fresh = new_runtime_scalars(*r, g);
    CacheLookup out{r, true, false};
    if (!fresh.empty()) {
      if (over_limit(*r->family)) return {};
      ++r->family->compiles;
      r->add_runtime_scalars(fresh);
      out.promoted = true;
      ++counters_.promotions;
    }
    ++counters_.hits;
    r->hits.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  const uint64_t skeleton = graph_hash(g, HashMode::Skeleton, ScalarKey::Kinds);
  auto& family = families_[skeleton];
  if (!family) family = std::make_unique<RegionFamily>();
  if (over_limit(*family)) return {};
  ++family->compiles;
  // Adopting leaves `g` empty: nothing below reads it.
  bucket.push_back(std::make_shared<CachedRegion>(
      key, adopt != nullptr ? std::move(*adopt) : Graph(g), std::vector<uint64_t>(words),
      std::vector<int32_t>(aliasing.begin(), aliasing.end()), family.get()));
  const std::shared_ptr<CachedRegion>& r = bucket.back();
  family->variants.push_back(r.get());
  order_.push_back(r.get());
  ++counters_.regions;
  ++counters_.misses;
  return {r, false, false};
}

void RegionCache::count_hit(CachedRegion* r) {
  {
    std::lock_guard lock(mu_);
    ++counters_.hits;
    ++counters_.repeats;
  }
  r->hits.fetch_add(1, std::memory_order_relaxed);
}

CacheCounters RegionCache::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::vector<const CachedRegion*> RegionCache::regions() const {
  std::lock_guard lock(mu_);
  return order_;
}

void RegionCache::clear() {
  std::lock_guard lock(mu_);
  by_key_.clear();
  families_.clear();
  order_.clear();
  counters_ = {};
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace kiln::tracer
