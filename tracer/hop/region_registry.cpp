#include "tracer/hop/region_registry.h"

#include <map>
#include <memory>
#include <typeindex>

#include "tracer/hop/compile_cache.h"

#include <mutex>
#include <unordered_map>

namespace kiln::hop {

namespace {

struct RegionRecord {
  std::vector<RegionSignature> signatures;  // few per name: a linear search is enough
  std::vector<uint64_t> bodies;             // structural hashes of the traced bodies
  size_t calls = 0;
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, RegionRecord> regions;
  std::map<std::pair<std::string, std::type_index>, std::unique_ptr<CompileCache>> traces;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: regions may run during exit
  return *r;
}

}  // namespace

RegionSignature region_signature(const TensorList& args) {
  RegionSignature sig;
  sig.reserve(args.size());
  for (const Tensor& a : args) sig.push_back(hop_meta(a));
  return sig;
}

bool note_region_call(const std::string& name, const RegionSignature& sig) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  RegionRecord& rec = r.regions[name];
  ++rec.calls;
  for (const RegionSignature& s : rec.signatures)
    if (s == sig) return false;
  rec.signatures.push_back(sig);
  return true;
}

size_t region_signature_count(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.regions.find(name);
  return it == r.regions.end() ? 0 : it->second.signatures.size();
}

size_t region_call_count(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.regions.find(name);
  return it == r.regions.end() ? 0 : it->second.calls;
}

bool note_region_body(const std::string& name, uint64_t body) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  RegionRecord& rec = r.regions[name];
  for (uint64_t b : rec.bodies)
    if (b == body) return false;
  rec.bodies.push_back(body);
  return true;
}

size_t region_body_count(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.regions.find(name);
  return it == r.regions.end() ? 0 : it->second.bodies.size();
}

CompileCache& region_trace_cache(const std::string& name, const std::type_info& fn_type) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto& cache = r.traces[{name, std::type_index(fn_type)}];
  if (!cache) cache = std::make_unique<CompileCache>();
  return *cache;  // never freed before reset: Region objects keep using it
}

void reset_region_registry() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.regions.clear();
  r.traces.clear();
}

}  // namespace kiln::hop
