// The CUBIN cache: compiled kernels kept in memory for the process and on disk across processes,
// in KILN_CACHE_DIR (default $XDG_CACHE_HOME/kiln, else ~/.cache/kiln), under cuda/.
//
// Key: everything that decides the CUBIN's bytes (the full source, the architecture, every NVRTC
// option in order, the NVRTC build's fingerprint), never a kernel name (other projects shipped
// stale or wrong binaries keyed by name). The file name is a 128-bit hash of the key material;
// the entry stores the material itself and a read compares it, so a hash collision is a miss,
// never the wrong kernel.
//
// Entry file <root>/cuda/<32 hex>.v1.cubin, host byte order:
//   header  magic "KILNCUB\0", u32 format version (1), u32 header size (48),
//           u64 key size, u64 payload size, u64 hash of the key, u64 checksum of the payload
//   then the key material, then the CUBIN.
// The version is in the file name and the header, so a later format never misreads this one.
//
// Writes are atomic: a temporary file in the same folder, then rename(2) over the final name, so
// a reader (another thread or process) sees a whole old entry, a whole new one, or none; no fsync
// (a torn file after a power loss fails its checksum, and fsync would cost milliseconds per
// kernel). A corrupt or truncated entry (bad magic, sizes, checksum) is logged, deleted and
// reported as a miss, so the caller recompiles and rewrites it; an I/O error never deletes
// anything. A folder that cannot be written (read-only, full, not a folder) turns the disk
// writes off for this cache with one warning; reads and the memory layer go on.
//
// Thread-safe.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

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
  const std::string& folder() const { return folder_; }
  // False once a write failed (or when there is no folder): entries stay in memory.
  bool writes_to_disk() const { return disk_writes_.load(std::memory_order_relaxed); }

  struct Stats {
    uint64_t memory_hits = 0, disk_hits = 0, misses = 0;
    uint64_t corrupt = 0;     // entries found damaged and deleted
    uint64_t collisions = 0;  // entries holding another key's material
    uint64_t writes = 0, write_failures = 0;
  };
  Stats stats() const;

 private:
  std::optional<Cubin> read_entry(const std::string& path, const std::string& material);
  bool write_entry(const std::string& path, const std::string& material,
                   std::span<const char> cubin);
  void disable_disk(const std::string& why);

  std::string folder_;  // root/cuda, or "" for memory only
  std::atomic<bool> disk_writes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const Cubin>> memory_;  // by key material
  Stats stats_;
};

// KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln ("" when none is known).
std::string default_cache_root();
// The process's CUBIN cache, in default_cache_root() (created on first use).
CubinDiskCache& cubin_cache();

}  // namespace kiln::jit::cuda
