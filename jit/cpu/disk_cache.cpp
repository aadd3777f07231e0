#include "jit/cpu/disk_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include "jit/loop/disk_cache_writer.h"
#include "runtime/build_fingerprint.h"
#include "runtime/config.h"
#include "runtime/logging.h"
#include "tracer/region_runner.h"

namespace kiln::jit {

namespace {

// Entries go to <root>/cpu/<fingerprint>/ (the folder is set per build: cache_in below).
constexpr DiskCacheFormat kFormat{
    {'K', 'I', 'L', 'N', 'C', 'P', 'U', '\0'}, 1, "", "kernel", "CPU kernel cache"};

// The cache of this build under `root`, its folder marked as just used, older builds' folders
// pruned in the background.
std::shared_ptr<DiskCache> cache_in(const std::string& root) {
  const std::string builds = (std::filesystem::path(root) / "cpu").string();
  DiskCacheFormat format = kFormat;
  format.folder = renderer_fingerprint().c_str();  // a static string: lives as long as the cache
  auto cache = std::make_shared<DiskCache>(builds, format);
  std::error_code ec;
  if (std::filesystem::exists(cache->folder(), ec))
    std::filesystem::last_write_time(cache->folder(), std::filesystem::file_time_type::clock::now(),
                                     ec);
  tracer::run_in_background([builds] { prune_cpu_kernel_builds(builds, kKeptOtherBuilds); });
  return cache;
}

struct ProcessCache {
  std::mutex mu;
  bool made = false;
  std::shared_ptr<DiskCache> cache;
};

ProcessCache& process_cache() {
  static auto* c = new ProcessCache();  // never destroyed: a background render may run at exit
  return *c;
}

}  // namespace

const std::string& renderer_fingerprint() {
  static const std::string f(build_fingerprint());
  return f;
}

std::string cpu_kernel_material(std::span<const uint64_t> render_key,
                                const std::string& fingerprint) {
  std::string m = fmt::format("kiln cpu kernel key v{}\nbuild {}\nwords {}\n", kFormat.version,
                              fingerprint, render_key.size());
  // The words as they are (host byte order: an entry never leaves the architecture that wrote
  // it): a 1000-add kernel's key is thousands of words, and formatting each as hex text took
  // a tenth of planning that region.
  const size_t at = m.size();
  m.resize(at + render_key.size_bytes());
  std::memcpy(m.data() + at, render_key.data(), render_key.size_bytes());
  return m;
}

std::shared_ptr<DiskCache> cpu_kernel_disk_cache() {
  if (!config().jit_disk_cache) return nullptr;
  ProcessCache& p = process_cache();
  std::lock_guard lock(p.mu);
  if (!p.made) {
    const std::string root = default_cache_root();
    if (!root.empty()) p.cache = cache_in(root);
    p.made = true;
  }
  return p.cache;
}

void set_cpu_kernel_disk_root(const std::string& root) {
  flush_disk_cache_writes();  // the replaced folder's entries land before its owner removes it
  ProcessCache& p = process_cache();
  std::lock_guard lock(p.mu);
  p.cache = root.empty() ? nullptr : cache_in(root);
  p.made = !root.empty();
}

int prune_cpu_kernel_builds(const std::string& builds, int others) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> found;
  for (auto it = fs::directory_iterator(builds, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::error_code e;
    if (!it->is_directory(e) || it->path().filename() == renderer_fingerprint()) continue;
    const fs::file_time_type t = fs::last_write_time(it->path(), e);
    if (!e) found.emplace_back(t, it->path());
  }
  if (static_cast<int>(found.size()) <= others) return 0;
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  int removed = 0;
  for (size_t i = static_cast<size_t>(others); i < found.size(); ++i) {
    std::error_code e;
    fs::remove_all(found[i].second, e);  // a folder another process still uses: its reads miss
    removed += !e;
  }
  if (removed > 0)
    KILN_DEBUG(Jit, "CPU kernel cache: removed the entries of {} older builds from {}", removed,
               builds);
  return removed;
}

std::optional<std::vector<char>> cpu_kernel_payload(const RenderedKernel& r) {
  if (!r.relocatable || r.fn == nullptr) return std::nullopt;
  std::vector<uint32_t> words{static_cast<uint32_t>(r.addresses.size())};
  for (const CodeAddress& a : r.addresses) {
    const int index = cpu_kernel_call_target_index(a.target);
    if (index < 0 || a.offset + 8 > r.code_bytes) return std::nullopt;
    words.push_back(a.offset);
    words.push_back(static_cast<uint32_t>(index));
  }
  std::vector<char> payload(words.size() * 4 + r.code_bytes);
  std::memcpy(payload.data(), words.data(), words.size() * 4);
  std::memcpy(payload.data() + words.size() * 4, reinterpret_cast<const void*>(r.fn), r.code_bytes);
  return payload;
}

KernelFn load_cpu_kernel(asmjit::JitRuntime& rt, std::span<const char> payload) {
  auto word = [&](size_t i) {
    uint32_t w;
    std::memcpy(&w, payload.data() + 4 * i, 4);
    return w;
  };
  if (payload.size() < 4) return nullptr;
  const uint64_t count = word(0);
  const uint64_t head = 4 + 8 * count;
  if (head >= payload.size()) return nullptr;
  std::vector<char> code(payload.begin() + static_cast<std::ptrdiff_t>(head), payload.end());
  const std::span<const void* const> targets = cpu_kernel_call_targets();
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t offset = word(1 + 2 * i), index = word(2 + 2 * i);
    // The place must be a `movabs rax, imm64`'s immediate (call_block's), the callee known.
    if (offset < 2 || offset + 8 > code.size() || index >= targets.size() ||
        static_cast<unsigned char>(code[offset - 2]) != 0x48 ||
        static_cast<unsigned char>(code[offset - 1]) != 0xB8)
      return nullptr;
    const uint64_t address = reinterpret_cast<uintptr_t>(targets[index]);
    std::memcpy(code.data() + offset, &address, 8);
  }
  asmjit::CodeHolder holder;
  holder.init(rt.environment());
  asmjit::x86::Assembler a(&holder);
  KernelFn fn = nullptr;
  if (a.embed(code.data(), code.size()) != asmjit::kErrorOk ||
      rt.add(&fn, &holder) != asmjit::kErrorOk)
    return nullptr;  // the render then meets the same trouble and reports it
  return fn;
}

}  // namespace kiln::jit
