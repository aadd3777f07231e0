// A kernel disk cache: compiled kernels (opaque bytes: a CUBIN, a CPU kernel's machine code)
// kept in files across processes, under <root>/<format.folder>, where root is KILN_CACHE_DIR
// (default $XDG_CACHE_HOME/kiln, else ~/.cache/kiln). Each target builds its key material
// (everything that decides the bytes, never a kernel name: other projects shipped stale or wrong
// binaries keyed by name) and its own in-memory layer; this class is the files.
//
// The file name is a 128-bit hash of the key material; the entry stores the material itself and
// a read compares it, so a hash collision is a miss, never the wrong kernel.
//
// Entry file <folder>/<32 hex>.v<version>.<extension>, host byte order:
//   header  magic (8 bytes, the format's), u32 format version, u32 header size (48),
//           u64 key size, u64 payload size, u64 hash of the key, u64 checksum of the payload
//   then the key material, then the payload.
// The version is in the file name and the header, so a later format never misreads this one.
//
// Writes are atomic: a temporary file in the same folder, then rename(2) over the final name, so
// a reader (another thread or process) sees a whole old entry, a whole new one, or none; no fsync
// (a torn file after a power loss fails its checksum, and fsync would cost milliseconds per
// kernel). A corrupt or truncated entry (bad magic, sizes, checksum) is logged, deleted and
// reported as a miss, so the caller rebuilds and rewrites it; an I/O error never deletes
// anything. A folder that cannot be written (read-only, full, not a folder) turns the writes off
// for this cache with one warning; reads go on.
//
// Thread-safe.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::jit {

struct DiskCacheFormat {
  char magic[8];          // the header's first bytes ("KILNCUB\0")
  uint32_t version;       // in the file name and the header
  const char* folder;     // under the root ("cuda")
  const char* extension;  // of entry files ("cubin")
  const char* what;       // in log lines ("CUBIN cache")
};

class DiskCache {
 public:
  // Entries in root/format.folder; an empty root: no folder (every read misses, writes are off).
  DiskCache(const std::string& root, const DiskCacheFormat& format);

  // The payload stored for `material`, or nullopt (absent, a collision, a damaged entry).
  std::optional<std::vector<char>> read(const std::string& material);
  // Stores `payload` for `material`; false when the writes are off or this one failed.
  bool write(const std::string& material, std::span<const char> payload);
  // Keeps `payload` for `material` in memory until write_held() writes it (the background
  // writer: disk_cache_writer.h); read() finds it meanwhile. False when the writes are off.
  bool hold(std::string material, std::vector<char> payload);
  // Writes what hold() kept for `material` and forgets it: write()'s result (false when nothing
  // is held for it, as when an earlier write_held of the same material wrote it).
  bool write_held(const std::string& material);

  // Where `material`'s entry lives ("" when there is no folder).
  std::string entry_path(const std::string& material) const;
  const std::string& folder() const { return folder_; }
  // False once a write failed (or when there is no folder).
  bool writes_to_disk() const { return writes_.load(std::memory_order_relaxed); }

  struct Stats {
    uint64_t corrupt = 0;     // entries found damaged and deleted
    uint64_t collisions = 0;  // entries holding another key's material
    uint64_t writes = 0, write_failures = 0;
  };
  Stats stats() const;

 private:
  bool write_entry(const std::string& material, std::span<const char> payload);
  void disable_writes(const std::string& why);

  DiskCacheFormat format_;
  std::string folder_;  // root/format.folder, or "" for none
  std::atomic<bool> writes_;
  mutable std::mutex mu_;  // stats_, held_
  Stats stats_;
  std::unordered_map<std::string, std::vector<char>> held_;  // material -> payload
};

// KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln ("" when none is known).
std::string default_cache_root();

}  // namespace kiln::jit
