#include "jit/cuda/disk_cache.h"

#include <fmt/format.h>

namespace kiln::jit::cuda {

namespace {

constexpr DiskCacheFormat kFormat{
    {'K', 'I', 'L', 'N', 'C', 'U', 'B', '\0'}, 1, "cuda", "cubin", "CUBIN cache"};

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out += fmt::format("{} {}\n", name, value.size());
  out += value;
  out += '\n';
}

}  // namespace

std::string CubinKey::material() const {
  std::string m = fmt::format("kiln cubin key v{}\n", kFormat.version);
  append_field(m, "arch", arch);
  append_field(m, "compiler", compiler);
  m += fmt::format("options {}\n", options.size());
  for (const auto& o : options) append_field(m, "option", o);
  append_field(m, "source", source);
  return m;
}

CubinDiskCache::CubinDiskCache(std::string root) : disk_(root, kFormat) {}

std::string CubinDiskCache::entry_path(const CubinKey& key) const {
  return disk_.entry_path(key.material());
}

CubinDiskCache::Stats CubinDiskCache::stats() const {
  const DiskCache::Stats disk = disk_.stats();
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.corrupt = disk.corrupt;
  s.collisions = disk.collisions;
  s.writes = disk.writes;
  s.write_failures = disk.write_failures;
  return s;
}

std::optional<Cubin> CubinDiskCache::get(const CubinKey& key) {
  std::string material = key.material();
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(material); it != memory_.end()) {
      ++stats_.memory_hits;
      return *it->second;
    }
  }
  std::optional<Cubin> found = disk_.read(material);
  std::lock_guard lock(mu_);
  if (!found) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.disk_hits;
  memory_.emplace(std::move(material), std::make_shared<const Cubin>(*found));
  return found;
}

void CubinDiskCache::put(const CubinKey& key, std::span<const char> cubin) {
  std::string material = key.material();
  disk_.write(material, cubin);
  std::lock_guard lock(mu_);
  memory_[std::move(material)] = std::make_shared<const Cubin>(cubin.begin(), cubin.end());
}

Cubin CubinDiskCache::get_or_compile(const CubinKey& key, const std::function<Cubin()>& compile) {
  if (auto hit = get(key)) return std::move(*hit);
  Cubin cubin = compile();
  put(key, cubin);
  return cubin;
}

CubinDiskCache& cubin_cache() {
  static CubinDiskCache cache(default_cache_root());
  return cache;
}

}  // namespace kiln::jit::cuda
