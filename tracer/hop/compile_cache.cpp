#include "tracer/hop/compile_cache.h"

namespace kiln::hop {

namespace {

bool same_guards(const std::vector<tracer::ValueMeta>& a, const std::vector<tracer::ValueMeta>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].sizes != b[i].sizes || a[i].strides != b[i].strides || a[i].dtype != b[i].dtype ||
        a[i].device != b[i].device)
      return false;
  }
  return true;
}

}  // namespace

std::vector<tracer::ValueMeta> CompileCache::guards_of(const TensorList& args) {
  std::vector<tracer::ValueMeta> out;
  out.reserve(args.size());
  for (const Tensor& a : args) out.push_back(tracer::meta_of(a.impl()));
  return out;
}

std::optional<CompileCache::Entry> CompileCache::find(
    const std::vector<tracer::ValueMeta>& guards) const {
  std::lock_guard lock(mu_);
  for (const Entry& e : entries_)
    if (same_guards(e.guards, guards)) return e;
  return std::nullopt;
}

bool CompileCache::add(Entry entry, int limit) {
  std::lock_guard lock(mu_);
  if (limit > 0 && static_cast<int>(entries_.size()) >= limit) return false;
  entries_.push_back(std::move(entry));
  return true;
}

size_t CompileCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

bool CompileCache::first_limit_warning() {
  std::lock_guard lock(mu_);
  return !std::exchange(warned_, true);
}

}  // namespace kiln::hop
