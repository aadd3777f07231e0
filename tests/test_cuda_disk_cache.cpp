// The CUBIN disk cache (jit/cuda/disk_cache.h): round trip, keys that cover every field, damaged
// entries (a flipped byte, a truncation) detected and rebuilt, a hash collision detected by the
// stored key material, folders that cannot be written (read-only, not a folder, full) degrading to
// memory with one warning, and processes sharing the folder never reading a half-written entry.
// No GPU and no NVRTC needed: payloads are arbitrary bytes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cuda_test_util.h"
#include "jit/cuda/disk_cache.h"
#include "log_capture.h"
#include "runtime/config.h"
#include "runtime/logging.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using jit::cuda::Cubin;
using jit::cuda::CubinDiskCache;
using jit::cuda::CubinKey;
using testing::JitLog;
using testing::TempDir;

CubinKey key(std::string source = "extern \"C\" __global__ void k() {}") {
  return CubinKey{std::move(source),
                  "sm_90",
                  {"--gpu-architecture=sm_90", "--std=c++17"},
                  "nvrtc 13.0 (123 bytes)"};
}

Cubin payload(size_t n, int seed) {
  Cubin c(n);
  for (size_t i = 0; i < n; ++i) c[i] = char((i * 131 + size_t(seed) * 7) & 0xff);
  return c;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

int files_in(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) ++n;
  return n;
}

TEST(CudaDiskCache, RoundTripAcrossInstances) {
  TempDir dir;
  const Cubin c = payload(10000, 1);
  {
    CubinDiskCache cache(dir.path());
    EXPECT_FALSE(cache.get(key()).has_value());
    cache.put(key(), c);
    EXPECT_EQ(cache.get(key()), c);
    EXPECT_EQ(cache.stats().memory_hits, 1u);
    EXPECT_EQ(cache.stats().writes, 1u);
  }
  CubinDiskCache cache(dir.path());
  const std::string path = cache.entry_path(key());
  EXPECT_TRUE(path.starts_with(dir.path() + "/cuda/")) << path;
  EXPECT_TRUE(path.ends_with(".v1.cubin")) << path;  // the format version is in the name
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(cache.get(key()), c);
  EXPECT_EQ(cache.stats().disk_hits, 1u);
  EXPECT_EQ(files_in(dir.path() + "/cuda"), 1) << "no temporary file left behind";
  // An empty CUBIN round-trips too (sizes, not contents, delimit the fields).
  cache.put(key("empty"), Cubin{});
  EXPECT_EQ(CubinDiskCache(dir.path()).get(key("empty")), Cubin{});
}

// The bugs other projects shipped: a key that leaves out the architecture, an option, the
// compiler's version or part of the source reuses a wrong binary.
TEST(CudaDiskCache, KeyCoversEveryField) {
  CubinDiskCache cache("/nonexistent-root");
  const CubinKey base = key();
  std::vector<CubinKey> variants(5, base);
  variants[0].source += " ";
  variants[1].arch = "sm_80";
  variants[2].options.push_back("--use_fast_math");
  variants[3].compiler = "nvrtc 13.1 (123 bytes)";
  variants[4].options = {"--std=c++17", "--gpu-architecture=sm_90"};  // order matters
  std::set<std::string> paths = {cache.entry_path(base)};
  for (const auto& v : variants) {
    EXPECT_NE(v.material(), base.material());
    paths.insert(cache.entry_path(v));
  }
  EXPECT_EQ(paths.size(), variants.size() + 1);
  // Length-prefixed fields: moving a character from one option to the next is another key.
  CubinKey a = base, b = base;
  a.options = {"-ab", "c"};
  b.options = {"-a", "bc"};
  EXPECT_NE(a.material(), b.material());
}

// A flipped byte anywhere (payload, key, header) is found, logged, deleted and rebuilt.
TEST(CudaDiskCache, FlippedByteIsDetectedDeletedAndRebuilt) {
  TempDir dir;
  const Cubin c = payload(5000, 2);
  const std::string path = CubinDiskCache(dir.path()).entry_path(key());
  for (size_t where : {size_t(4900), size_t(60), size_t(20)}) {  // payload, key, header sizes
    CubinDiskCache(dir.path()).put(key(), c);
    std::string bytes = read_all(path);
    ASSERT_GT(bytes.size(), 5048u);
    const size_t at = where == 4900 ? bytes.size() - 100 : where;
    bytes[at] = char(bytes[at] ^ 0x10);
    write_all(path, bytes);

    JitLog log;
    CubinDiskCache cache(dir.path());
    EXPECT_FALSE(cache.get(key()).has_value()) << "flipped byte at " << at;
    EXPECT_EQ(cache.stats().corrupt, 1u);
    EXPECT_FALSE(fs::exists(path)) << "a damaged entry is deleted";
    EXPECT_EQ(log.count("is damaged"), 1) << log.text();
    int compiles = 0;
    EXPECT_EQ(cache.get_or_compile(key(),
                                   [&] {
                                     ++compiles;
                                     return c;
                                   }),
              c);
    EXPECT_EQ(compiles, 1);
    EXPECT_EQ(CubinDiskCache(dir.path()).get(key()), c) << "rebuilt on disk";
  }
}

TEST(CudaDiskCache, TruncatedEntryIsDetected) {
  TempDir dir;
  const Cubin c = payload(5000, 3);
  const std::string path = CubinDiskCache(dir.path()).entry_path(key());
  for (size_t keep : {size_t(0), size_t(10), size_t(48), size_t(200), size_t(5000)}) {
    CubinDiskCache(dir.path()).put(key(), c);
    std::string bytes = read_all(path);
    if (keep == 5000) keep = bytes.size() - 1;
    fs::resize_file(path, keep);
    CubinDiskCache cache(dir.path());
    EXPECT_FALSE(cache.get(key()).has_value()) << "kept " << keep << " bytes";
    EXPECT_EQ(cache.stats().corrupt, 1u) << "kept " << keep << " bytes";
    EXPECT_FALSE(fs::exists(path));
  }
  // Extra bytes after the CUBIN are damage too.
  CubinDiskCache(dir.path()).put(key(), c);
  write_all(path, read_all(path) + "x");
  CubinDiskCache cache(dir.path());
  EXPECT_FALSE(cache.get(key()).has_value());
  EXPECT_EQ(cache.stats().corrupt, 1u);
}

// Two keys whose file names collide: simulated by putting key A's sound entry at key B's path.
// The stored key material differs, so B misses (never A's CUBIN), A's entry is not "damaged",
// and B's put replaces it.
TEST(CudaDiskCache, CollisionIsAMissNeverTheWrongCubin) {
  TempDir dir;
  const CubinKey a = key("kernel A"), b = key("kernel B");
  CubinDiskCache writer(dir.path());
  writer.put(a, payload(3000, 4));
  fs::copy_file(writer.entry_path(a), writer.entry_path(b));
  CubinDiskCache cache(dir.path());
  EXPECT_FALSE(cache.get(b).has_value());
  EXPECT_EQ(cache.stats().collisions, 1u);
  EXPECT_EQ(cache.stats().corrupt, 0u);
  EXPECT_TRUE(fs::exists(cache.entry_path(b))) << "a sound entry of another key is kept";
  cache.put(b, payload(3000, 5));
  EXPECT_EQ(CubinDiskCache(dir.path()).get(b), payload(3000, 5));
  EXPECT_EQ(CubinDiskCache(dir.path()).get(a), payload(3000, 4));
}

// A cache folder under a regular file can never be created, even by root: writes turn off with
// exactly one warning, and the process keeps its kernels in memory.
TEST(CudaDiskCache, UnwritableFolderDegradesToMemoryWithOneWarning) {
  TempDir dir;
  const std::string file = dir.path() + "/a-file";
  write_all(file, "not a folder");
  JitLog log;
  CubinDiskCache cache(file + "/kiln");
  EXPECT_TRUE(cache.writes_to_disk());
  cache.put(key("one"), payload(100, 6));
  cache.put(key("two"), payload(100, 7));
  EXPECT_FALSE(cache.writes_to_disk());
  EXPECT_EQ(log.count("kept in memory only"), 1) << log.text();
  EXPECT_EQ(cache.get(key("one")), payload(100, 6));
  EXPECT_EQ(cache.get(key("two")), payload(100, 7));
  EXPECT_EQ(cache.stats().write_failures, 1u) << "after the first failure no write is tried";
}

TEST(CudaDiskCache, ReadOnlyFolderDegradesToMemory) {
  TempDir dir;
  // An entry written while the folder was writable is still read afterwards.
  CubinDiskCache(dir.path()).put(key("old"), payload(100, 8));
  const std::string folder = dir.path() + "/cuda";
  ::chmod(folder.c_str(), 0555);
  if (::access(folder.c_str(), W_OK) == 0) {
    ::chmod(folder.c_str(), 0755);
    GTEST_SKIP() << "running as root: chmod does not stop root's writes (the not-a-folder and "
                    "full-disk tests cover the degraded path)";
  }
  JitLog log;
  CubinDiskCache cache(dir.path());
  cache.put(key("new"), payload(100, 9));
  EXPECT_FALSE(cache.writes_to_disk());
  EXPECT_EQ(log.count("kept in memory only"), 1) << log.text();
  EXPECT_EQ(cache.get(key("new")), payload(100, 9));
  EXPECT_EQ(cache.get(key("old")), payload(100, 8));
  ::chmod(folder.c_str(), 0755);
}

// A full disk, simulated in a child process by a file size limit (EFBIG from write): no torn
// entry and no temporary file is left, writes turn off, the kernel stays in memory.
TEST(CudaDiskCache, FullDiskLeavesNoPartialEntry) {
  TempDir dir;
  fs::create_directories(dir.path() + "/cuda");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    CubinDiskCache cache(dir.path());
    cache.put(key(), payload(64 * 1024, 10));
    int code = 0;
    if (cache.writes_to_disk()) code |= 1;
    if (cache.get(key()) != payload(64 * 1024, 10)) code |= 2;
    if (cache.stats().write_failures != 1) code |= 4;
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bits: 1 still writing, 2 lost in memory, 4 failures";
  EXPECT_EQ(files_in(dir.path() + "/cuda"), 0) << "no entry and no temporary file";
}

// Processes sharing the folder write and read one key at once (a 2 MB entry, so writes take
// time): every read is either a miss or the whole, valid CUBIN, never a damaged entry.
TEST(CudaDiskCache, ConcurrentProcessesNeverReadAHalfWrittenEntry) {
  TempDir dir;
  constexpr int kProcs = 6, kRounds = 25;
  const Cubin c = payload(2 << 20, 11);
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0, hits = 0;
      for (int r = 0; r < kRounds; ++r) {
        CubinDiskCache cache(dir.path());  // a fresh instance: every get reads the disk
        if (auto got = cache.get(key())) {
          ++hits;
          if (*got != c) code |= 1;
        }
        // Writers overwrite the entry while others read it.
        if (r % 2 == p % 2) cache.put(key(), c);
        if (cache.stats().corrupt != 0) code |= 2;
        if (cache.stats().write_failures != 0) code |= 4;
      }
      if (hits == 0) code |= 8;
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "bits: 1 wrong bytes, 2 damaged entry read, 4 write failed, 8 never hit";
  }
  EXPECT_EQ(CubinDiskCache(dir.path()).get(key()), c);
  EXPECT_EQ(files_in(dir.path() + "/cuda"), 1) << "no temporary file left behind";
}

TEST(CudaDiskCache, DefaultRootFollowsKilnCacheDirThenXdgThenHome) {
  const std::string saved = config().cache_dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = xdg != nullptr ? xdg : "";
  config().cache_dir = "/some/where";
  EXPECT_EQ(jit::default_cache_root(), "/some/where");
  config().cache_dir = "";
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(jit::default_cache_root(), "/xdg/kiln");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // invalid per the XDG spec: ignored
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    EXPECT_EQ(jit::default_cache_root(), std::string(home) + "/.cache/kiln");
  }
  if (xdg != nullptr)
    ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
  config().cache_dir = saved;
}

}  // namespace
}  // namespace kiln
