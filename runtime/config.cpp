#include "runtime/config.h"

#include <charconv>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "runtime/error.h"
#include "runtime/logging.h"

namespace kiln {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

bool parse_bool(const char* name, const char* v) {
  std::string_view s(v);
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  fail("{}={}: not a valid value; expected one of 0, 1, true, false, on, off, yes, no", name, s);
}

int parse_int(const char* name, const char* v, int lo, int hi) {
  std::string_view s(v);
  int out = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  KILN_CHECK(ec == std::errc() && p == s.data() + s.size() && out >= lo && out <= hi,
             "{}={}: not a valid value; expected an integer in [{}, {}]", name, s, lo, hi);
  return out;
}

Device parse_device(const char* name, const char* v) {
  std::string_view s(v);
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  if (s.starts_with("cuda:")) {
    int idx = 0;
    auto [p, ec] = std::from_chars(s.data() + 5, s.data() + s.size(), idx);
    if (ec == std::errc() && p == s.data() + s.size() && idx >= 0 && idx < 64)
      return Device::cuda(idx);
  }
  fail("{}={}: not a valid device; expected cpu, cuda or cuda:N", name, s);
}

}  // namespace

Config config_from_env() {
  Config c;
  if (auto v = env("KILN_JIT")) c.jit = parse_bool("KILN_JIT", v);
  if (auto v = env("KILN_JIT_THRESHOLD"))
    c.jit_threshold = parse_int("KILN_JIT_THRESHOLD", v, 0, 1 << 30);
  if (auto v = env("KILN_JIT_ASYNC")) c.jit_async = parse_bool("KILN_JIT_ASYNC", v);
  if (auto v = env("KILN_JIT_RECOMPILE_LIMIT"))
    c.jit_recompile_limit = parse_int("KILN_JIT_RECOMPILE_LIMIT", v, 0, 1 << 20);
  if (auto v = env("KILN_JIT_SEGMENT_LIMIT"))
    c.jit_segment_limit = parse_int("KILN_JIT_SEGMENT_LIMIT", v, 1, 1 << 30);
  if (auto v = env("KILN_JIT_VALIDATE")) c.jit_validate = parse_bool("KILN_JIT_VALIDATE", v);
  if (auto v = env("KILN_JIT_PASSES")) c.jit_passes = parse_bool("KILN_JIT_PASSES", v);
  if (auto v = env("KILN_JIT_BATCH_PRODUCTS"))
    c.jit_batch_products = parse_bool("KILN_JIT_BATCH_PRODUCTS", v);
  if (auto v = env("KILN_JIT_ISA")) {
    const std::string s = v;
    if (s != "avx512" && s != "avx2" && s != "sse2")
      fail("KILN_JIT_ISA={}: not a JIT instruction set; expected avx512, avx2 or sse2", s);
    c.jit_isa = s;
  }
  if (auto v = env("KILN_JIT_UNROLL")) c.jit_unroll = parse_int("KILN_JIT_UNROLL", v, 0, 4);
  if (auto v = env("KILN_JIT_WARMUP")) c.jit_warm_up = parse_bool("KILN_JIT_WARMUP", v);
  if (auto v = env("KILN_JIT_EAGER_TIER")) c.jit_eager_tier = parse_bool("KILN_JIT_EAGER_TIER", v);
  if (auto v = env("KILN_JIT_BASELINE")) {
    const std::string s = v;
    if (s == "off" || s == "0")
      c.jit_baseline = BaselineTier::Off;
    else if (s == "on" || s == "1")
      c.jit_baseline = BaselineTier::On;
    else if (s == "only")
      c.jit_baseline = BaselineTier::Only;
    else
      fail("KILN_JIT_BASELINE={}: expected on, off or only", s);
  }
  if (auto v = env("KILN_JIT_ASSEMBLER")) c.jit_assembler = parse_bool("KILN_JIT_ASSEMBLER", v);
  if (auto v = env("KILN_JIT_DISK_CACHE")) c.jit_disk_cache = parse_bool("KILN_JIT_DISK_CACHE", v);
  if (auto v = env("KILN_JIT_STREAMING")) {
    const std::string s = v;
    if (s != "auto" && s != "on" && s != "off")
      fail("KILN_JIT_STREAMING={}: expected auto, on or off", s);
    c.jit_streaming = s;
  }
  if (auto v = env("KILN_GEMM")) {
    const std::string s = v;
    if (s != "auto" && s != "openblas") fail("KILN_GEMM={}: expected auto or openblas", s);
    c.gemm = s;
  }
  if (auto v = env("KILN_DEVICE")) c.default_device = parse_device("KILN_DEVICE", v);
  if (auto v = env("KILN_NUM_THREADS")) c.num_threads = parse_int("KILN_NUM_THREADS", v, 0, 4096);
  if (auto v = env("KILN_HUGE_PAGES")) c.huge_pages = parse_bool("KILN_HUGE_PAGES", v);
  if (auto v = env("KILN_GATHER_BLOCK_MIN_KIB"))
    c.gather_block_min_kib = parse_int("KILN_GATHER_BLOCK_MIN_KIB", v, 0, 1 << 30);
  if (auto v = env("KILN_LOG")) {
    logging::check_levels(v);  // a bad spec fails here, naming KILN_LOG, not at the first log line
    c.log = v;
  }
  if (auto v = env("KILN_CACHE_DIR")) c.cache_dir = v;
  if (auto v = env("KILN_DUMP")) c.dump = v;
  if (auto v = env("KILN_PROFILE")) c.profile = v;
  if (auto v = env("KILN_STATS")) c.stats = parse_bool("KILN_STATS", v);
  return c;
}

Config& config() {
  static Config c = config_from_env();
  return c;
}

int num_threads() {
  int n = config().num_threads;
  if (n > 0) return n;
  static const int hw = std::max(1u, std::thread::hardware_concurrency());
  return hw;
}

void set_num_threads(int n) {
  KILN_CHECK(n >= 0, "set_num_threads: expected a count >= 0 (0 = all cores), got {}", n);
  config().num_threads = n;
}

}  // namespace kiln
