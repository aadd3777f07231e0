// The CUBIN cache: compiled kernels kept in memory for the process and on disk across processes
// (jit/loop/disk_cache.h: the files, their format and their failure modes), under cuda/ in the
// cache root, as <32 hex>.v1.cubin with the magic "KILNCUB\0".
//
// Key: everything that decides the CUBIN's bytes (the full source, the architecture, every NVRTC
// option in order, the NVRTC build's fingerprint), never a kernel name.
//
// Thread-safe.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/loop/disk_cache.h"

namespace kiln::jit::cuda {

using Cubin = std::vector<char>;

struct CubinKey {
  std::string source;                // the full CUDA C++ source
  std::string arch;                  // "sm_90"
  std::vector<std::string> options;  // every NVRTC option, in order
  std::string compiler;              // NvrtcStatus::fingerprint(): version and build
  // The canonical encoding of all fields (length-prefixed, so no two keys encode alike).
  std::string material() const;
};

class CubinDiskCache {
 public:
  // `root`: the cache folder (entries go to root/cuda); empty: memory only.
  explicit CubinDiskCache(std::string root);

  // The CUBIN for `key` from memory or disk, or nullopt (a miss, a collision, a corrupt entry).
  std::optional<Cubin> get(const CubinKey& key);
  // Keeps `cubin` in memory and, while the folder is writable, on disk.
  void put(const CubinKey& key, std::span<const char> cubin);
  // get(), else compile() and put() its result.
  Cubin get_or_compile(const CubinKey& key, const std::function<Cubin()>& compile);

  // Where `key`'s entry lives on disk ("" when memory only).
  std::string entry_path(const CubinKey& key) const;
  const std::string& folder() const { return disk_.folder(); }
  // False once a write failed (or when there is no folder): entries stay in memory.
  bool writes_to_disk() const { return disk_.writes_to_disk(); }

  struct Stats {
    uint64_t memory_hits = 0, disk_hits = 0, misses = 0;
    uint64_t corrupt = 0;     // entries found damaged and deleted
    uint64_t collisions = 0;  // entries holding another key's material
    uint64_t writes = 0, write_failures = 0;
  };
  Stats stats() const;

 private:
  DiskCache disk_;  // root/cuda, or none for memory only
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const Cubin>> memory_;  // by key material
  Stats stats_;
};

// The process's CUBIN cache, in default_cache_root() (created on first use).
CubinDiskCache& cubin_cache();

}  // namespace kiln::jit::cuda
