#include "jit/loop/disk_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "jit/loop/content_hash.h"
#include "runtime/config.h"
#include "runtime/logging.h"

namespace kiln::jit {

namespace {

constexpr uint64_t kKeySeed = 3, kPayloadSeed = 4;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t key_size;
  uint64_t payload_size;
  uint64_t key_hash;
  uint64_t payload_hash;
};
static_assert(sizeof(Header) == 48);

std::string errno_text(int e) { return std::strerror(e); }

// Reads the whole file; false on an I/O error (errno set), including its absence.
bool read_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    return false;
  }
  out.resize(size_t(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      errno = e;
      return false;
    }
    if (n == 0) break;  // the file shrank under us: what was read is judged like a truncation
    done += size_t(n);
  }
  out.resize(done);
  ::close(fd);
  return true;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

}  // namespace

DiskCache::DiskCache(const std::string& root, const DiskCacheFormat& format)
    : format_(format),
      folder_(root.empty() ? std::string()
                           : (std::filesystem::path(root) / format.folder).string()),
      writes_(!folder_.empty()) {}

std::string DiskCache::entry_path(const std::string& material) const {
  if (folder_.empty()) return "";
  return fmt::format("{}/{}.v{}.{}", folder_, content_hash_hex128(material), format_.version,
                     format_.extension);
}

DiskCache::Stats DiskCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::optional<std::vector<char>> DiskCache::read(const std::string& material) {
  if (folder_.empty()) return std::nullopt;
  {
    std::lock_guard lock(mu_);
    if (auto it = held_.find(material); it != held_.end()) return it->second;
  }
  const std::string path = entry_path(material);
  std::string bytes;
  if (!read_file(path, bytes)) {
    // Absent is the usual miss; any other I/O error is not the entry's fault: keep the file.
    if (errno != ENOENT)
      KILN_DEBUG(Jit, "{}: cannot read {}: {}", format_.what, path, errno_text(errno));
    return std::nullopt;
  }
  const char* damage = nullptr;
  Header h{};
  if (bytes.size() < sizeof(Header)) {
    damage = "truncated header";
  } else {
    std::memcpy(&h, bytes.data(), sizeof(Header));
    if (std::memcmp(h.magic, format_.magic, sizeof(h.magic)) != 0)
      damage = "bad magic";
    else if (h.version != format_.version || h.header_size != sizeof(Header))
      damage = "unknown format version";
    else if (h.key_size > bytes.size() || h.payload_size > bytes.size() ||
             sizeof(Header) + h.key_size + h.payload_size != bytes.size())
      damage = "truncated or oversized";
  }
  std::string_view stored_key, payload;
  if (damage == nullptr) {
    stored_key = std::string_view(bytes).substr(sizeof(Header), h.key_size);
    payload = std::string_view(bytes).substr(sizeof(Header) + h.key_size);
    if (content_hash(stored_key, kKeySeed) != h.key_hash)
      damage = "key checksum mismatch";
    else if (content_hash(payload, kPayloadSeed) != h.payload_hash)
      damage = "payload checksum mismatch";
  }
  if (damage != nullptr) {
    KILN_WARN(Jit, "{}: {} is damaged ({}); deleting it, the kernel is recompiled", format_.what,
              path, damage);
    ::unlink(path.c_str());
    std::lock_guard lock(mu_);
    ++stats_.corrupt;
    return std::nullopt;
  }
  if (stored_key != material) {
    // A sound entry for another key whose material hashes alike: a miss; write() replaces it.
    KILN_INFO(Jit, "{}: {} holds another kernel (hash collision); recompiling", format_.what, path);
    std::lock_guard lock(mu_);
    ++stats_.collisions;
    return std::nullopt;
  }
  return std::vector<char>(payload.begin(), payload.end());
}

bool DiskCache::write(const std::string& material, std::span<const char> payload) {
  if (!writes_to_disk()) return false;
  const bool ok = write_entry(material, payload);
  std::lock_guard lock(mu_);
  ++(ok ? stats_.writes : stats_.write_failures);
  return ok;
}

bool DiskCache::hold(std::string material, std::vector<char> payload) {
  if (!writes_to_disk()) return false;
  std::lock_guard lock(mu_);
  held_.insert_or_assign(std::move(material), std::move(payload));
  return true;
}

bool DiskCache::write_held(const std::string& material) {
  std::vector<char> payload;
  {
    std::lock_guard lock(mu_);
    auto it = held_.find(material);
    if (it == held_.end()) return false;
    payload = it->second;  // kept held while it is written: a read finds it in one place or both
  }
  const bool ok = write(material, payload);
  // A second hold() of the material meanwhile held the same bytes (a rendering is determined by
  // its key): the file has them, and that hold's own write_held finds nothing to do.
  std::lock_guard lock(mu_);
  held_.erase(material);
  return ok;
}

bool DiskCache::write_entry(const std::string& material, std::span<const char> payload) {
  const std::string path = entry_path(material);
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec) {
    disable_writes(fmt::format("cannot create {}: {}", folder_, ec.message()));
    return false;
  }
  Header h{};
  std::memcpy(h.magic, format_.magic, sizeof(h.magic));
  h.version = format_.version;
  h.header_size = sizeof(Header);
  h.key_size = material.size();
  h.payload_size = payload.size();
  h.key_hash = content_hash(std::string_view(material), kKeySeed);
  h.payload_hash = content_hash(payload, kPayloadSeed);

  // Unique among threads and processes sharing the folder; the leading dot keeps it apart from
  // entries. O_EXCL: never write into someone else's temporary file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = fmt::format("{}/.tmp-{}-{}.v{}", folder_, ::getpid(),
                                counter.fetch_add(1, std::memory_order_relaxed), format_.version);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    disable_writes(fmt::format("cannot create a file in {}: {}", folder_, errno_text(errno)));
    return false;
  }
  bool ok = write_all(fd, reinterpret_cast<const char*>(&h), sizeof(h)) &&
            write_all(fd, material.data(), material.size()) &&
            write_all(fd, payload.data(), payload.size());
  int e = ok ? 0 : (errno != 0 ? errno : EIO);
  // close() reports deferred write errors on some filesystems (NFS: a full quota).
  if (::close(fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    disable_writes(fmt::format("cannot write {}: {}", path, errno_text(e)));
  }
  return ok;
}

void DiskCache::disable_writes(const std::string& why) {
  // exchange: of several threads failing at once, exactly one warns.
  if (writes_.exchange(false))
    KILN_WARN(Jit, "{}: {}; compiled kernels are kept in memory only for this process",
              format_.what, why);
}

std::string default_cache_root() {
  if (!config().cache_dir.empty()) return config().cache_dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  // The XDG spec: a relative path is invalid and must be ignored.
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/kiln";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/kiln";
  return "";
}

}  // namespace kiln::jit
