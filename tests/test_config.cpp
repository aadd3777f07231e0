// KILN_* environment variables (config_from_env with setenv): good values parse, bad ones raise a
// kiln::Error naming the variable and the accepted values; KILN_LOG specs; set_num_threads.
#include <cstdlib>

#include "core_test_util.h"
#include "runtime/logging.h"

using namespace kiln;
using namespace kiln::testutil;

namespace {

const char* const kVars[] = {"KILN_JIT",
                             "KILN_JIT_THRESHOLD",
                             "KILN_JIT_ASYNC",
                             "KILN_JIT_RECOMPILE_LIMIT",
                             "KILN_JIT_VALIDATE",
                             "KILN_DEVICE",
                             "KILN_NUM_THREADS",
                             "KILN_LOG",
                             "KILN_CACHE_DIR",
                             "KILN_DUMP",
                             "KILN_PROFILE",
                             "KILN_STATS",
                             "KILN_JIT_PASSES",
                             "KILN_JIT_UNROLL",
                             "KILN_JIT_STREAMING",
                             "KILN_JIT_EAGER_TIER",
                             "KILN_HUGE_PAGES",
                             "KILN_GATHER_BLOCK_MIN_KIB",
                             "KILN_JIT_BATCH_PRODUCTS",
                             "KILN_JIT_DISK_CACHE",
                             "KILN_GEMM"};

// Sets the variables for one scope and restores their previous values after.
class EnvGuard {
 public:
  EnvGuard() {
    for (const char* v : kVars) {
      const char* cur = std::getenv(v);
      saved_.emplace_back(v, cur ? std::optional<std::string>(cur) : std::nullopt);
      unsetenv(v);
    }
  }
  ~EnvGuard() {
    for (auto& [name, val] : saved_) {
      if (val)
        setenv(name.c_str(), val->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

Config with(const char* name, const char* value) {
  setenv(name, value, 1);
  Config c = config_from_env();
  unsetenv(name);
  return c;
}

void expect_bad(const char* name, const char* value, std::vector<std::string> accepted) {
  setenv(name, value, 1);
  accepted.insert(
      accepted.begin(),
      std::string(name) + (name == std::string("KILN_LOG") ? "" : std::string("=") + value));
  expect_error([] { config_from_env(); }, accepted);
  unsetenv(name);
}

}  // namespace

TEST(Config, DefaultsAndGoodValues) {
  EnvGuard g;
  Config d = config_from_env();
  EXPECT_FALSE(d.jit);
  EXPECT_EQ(d.num_threads, 0);
  EXPECT_EQ(d.log, "warn");
  EXPECT_TRUE(d.default_device.is_cpu());
  EXPECT_TRUE(with("KILN_JIT", "1").jit);
  EXPECT_TRUE(with("KILN_JIT", "on").jit);
  EXPECT_FALSE(with("KILN_JIT_ASYNC", "false").jit_async);
  EXPECT_TRUE(with("KILN_JIT_VALIDATE", "yes").jit_validate);
  EXPECT_TRUE(d.jit_passes);
  EXPECT_FALSE(with("KILN_JIT_PASSES", "0").jit_passes);
  EXPECT_TRUE(d.jit_batch_products);
  EXPECT_FALSE(with("KILN_JIT_BATCH_PRODUCTS", "0").jit_batch_products);
  EXPECT_TRUE(with("KILN_JIT_DISK_CACHE", "1").jit_disk_cache);
  EXPECT_FALSE(with("KILN_JIT_DISK_CACHE", "0").jit_disk_cache);
  EXPECT_TRUE(d.jit_eager_tier);
  EXPECT_FALSE(with("KILN_JIT_EAGER_TIER", "0").jit_eager_tier);
  EXPECT_TRUE(with("KILN_STATS", "true").stats);
  EXPECT_TRUE(d.huge_pages);
  EXPECT_FALSE(with("KILN_HUGE_PAGES", "0").huge_pages);
  EXPECT_EQ(with("KILN_JIT_THRESHOLD", "7").jit_threshold, 7);
  EXPECT_EQ(with("KILN_JIT_RECOMPILE_LIMIT", "0").jit_recompile_limit, 0);
  EXPECT_EQ(d.jit_unroll, 0);
  EXPECT_EQ(with("KILN_JIT_UNROLL", "3").jit_unroll, 3);
  EXPECT_EQ(with("KILN_GATHER_BLOCK_MIN_KIB", "0").gather_block_min_kib, 0);
  EXPECT_EQ(d.jit_streaming, "auto");
  EXPECT_EQ(with("KILN_JIT_STREAMING", "off").jit_streaming, "off");
  EXPECT_EQ(with("KILN_JIT_STREAMING", "on").jit_streaming, "on");
  EXPECT_EQ(d.gemm, "auto");
  EXPECT_EQ(with("KILN_GEMM", "openblas").gemm, "openblas");
  EXPECT_EQ(with("KILN_NUM_THREADS", "3").num_threads, 3);
  EXPECT_EQ(with("KILN_NUM_THREADS", "0").num_threads, 0);  // 0 = all cores, as documented
  EXPECT_TRUE(with("KILN_DEVICE", "cuda").default_device.is_cuda());
  EXPECT_EQ(with("KILN_DEVICE", "cuda:1").default_device, Device::cuda(1));
  EXPECT_TRUE(with("KILN_DEVICE", "cpu").default_device.is_cpu());
  EXPECT_EQ(with("KILN_LOG", "info,ops=debug").log, "info,ops=debug");
  EXPECT_EQ(with("KILN_CACHE_DIR", "/tmp/kc").cache_dir, "/tmp/kc");
  EXPECT_EQ(with("KILN_DUMP", "/tmp/kd").dump, "/tmp/kd");
  EXPECT_EQ(with("KILN_PROFILE", "/tmp/p.json").profile, "/tmp/p.json");
  EXPECT_FALSE(with("KILN_JIT", "").jit);  // empty means unset
}

TEST(Config, BadValuesNameTheVariableAndTheAcceptedValues) {
  EnvGuard g;
  for (const char* b : {"KILN_JIT", "KILN_JIT_ASYNC", "KILN_JIT_VALIDATE", "KILN_JIT_PASSES",
                        "KILN_STATS", "KILN_JIT_EAGER_TIER", "KILN_HUGE_PAGES"}) {
    expect_bad(b, "maybe", {"0", "1", "true", "false"});
    expect_bad(b, "2", {"0", "1"});
  }
  expect_bad("KILN_JIT_THRESHOLD", "abc", {"integer"});
  expect_bad("KILN_JIT_THRESHOLD", "-1", {"integer", "[0,"});
  expect_bad("KILN_JIT_THRESHOLD", "3x", {"integer"});
  expect_bad("KILN_JIT_RECOMPILE_LIMIT", "1.5", {"integer"});
  expect_bad("KILN_JIT_UNROLL", "5", {"integer", "[0,"});
  expect_bad("KILN_GATHER_BLOCK_MIN_KIB", "-1", {"integer", "[0,"});
  expect_bad("KILN_JIT_STREAMING", "1", {"KILN_JIT_STREAMING", "auto", "on", "off"});
  expect_bad("KILN_GEMM", "mkl", {"KILN_GEMM", "auto", "openblas"});
  expect_bad("KILN_NUM_THREADS", "-2", {"integer", "[0,"});
  expect_bad("KILN_NUM_THREADS", "many", {"integer"});
  expect_bad("KILN_NUM_THREADS", "99999999999", {"integer"});
  expect_bad("KILN_DEVICE", "tpu", {"cpu", "cuda", "cuda:N"});
  expect_bad("KILN_DEVICE", "cuda:x", {"cpu", "cuda:N"});
  expect_bad("KILN_DEVICE", "cuda:-1", {"cuda:N"});
  expect_bad("KILN_LOG", "loud", {"KILN_LOG", "loud", "trace", "debug", "info", "warn", "off"});
  expect_bad("KILN_LOG", "nope=debug", {"KILN_LOG", "nope", "runtime", "ops", "tracer", "jit"});
  expect_bad("KILN_LOG", "ops=", {"KILN_LOG", "level"});
}

TEST(Logging, LevelSpecs) {
  // Every level name spdlog users write, including the short forms.
  for (const char* l :
       {"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"})
    EXPECT_NO_THROW(logging::apply_levels(l)) << l;
  logging::apply_levels("info,ops=debug,jit=off");
  EXPECT_EQ(logging::get(logging::Subsystem::Ops).level(), spdlog::level::debug);
  EXPECT_EQ(logging::get(logging::Subsystem::Jit).level(), spdlog::level::off);
  EXPECT_EQ(logging::get(logging::Subsystem::Runtime).level(), spdlog::level::info);
  expect_error([] { logging::apply_levels("verbose"); }, {"KILN_LOG", "verbose", "warn"});
  expect_error([] { logging::apply_levels("gpu=info"); }, {"KILN_LOG", "gpu", "runtime"});
  // A rejected spec changes nothing.
  EXPECT_ANY_THROW(logging::apply_levels("runtime=trace,gpu=info"));
  EXPECT_EQ(logging::get(logging::Subsystem::Runtime).level(), spdlog::level::info);
  logging::apply_levels("warn");
  EXPECT_EQ(logging::get(logging::Subsystem::Perf).level(), spdlog::level::warn);
  KILN_DEBUG(Ops, "not printed {}", 1);  // the macros compile and run with the default levels
}

TEST(Config, NumThreads) {
  int saved = config().num_threads;
  set_num_threads(2);
  EXPECT_EQ(num_threads(), 2);
  set_num_threads(0);
  EXPECT_GE(num_threads(), 1);
  expect_error([] { set_num_threads(-1); }, {"set_num_threads", "-1"});
  set_num_threads(saved);
}
