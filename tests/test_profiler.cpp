// The profiler (runtime/profiler.h): the trace is well-formed JSON in the Chrome trace format with
// the expected events from every thread, each event kind's record function produces a valid
// event, op counters and sampling are exact, the stats text names the ops with their counts, the
// exit writer runs on exit(), and nothing is recorded while the profiler is off.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "runtime/profiler.h"
#include "self_child.h"
#include "tracer/region_runner.h"

namespace {

namespace prof = kiln::profiler;

// A strict JSON reader (RFC 8259 syntax), enough to validate the trace and look into it.
struct Json {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* get(std::string_view key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  std::string str(std::string_view key) const {
    const Json* v = get(key);
    return v && v->type == String ? v->string : std::string();
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}
  Json parse() {
    Json v = value();
    skip_ws();
    if (i_ != s_.size()) error("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    throw std::runtime_error("JSON error at offset " + std::to_string(i_) + ": " + what);
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  char peek() { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++i_;
  }
  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) error("bad literal");
    i_ += word.size();
  }
  Json value() {
    skip_ws();
    Json v;
    char c = peek();
    if (c == '{') {
      v.type = Json::Object;
      ++i_;
      skip_ws();
      if (peek() == '}') return ++i_, v;
      for (;;) {
        skip_ws();
        std::string key = string_body();
        skip_ws();
        expect(':');
        v.members.emplace_back(std::move(key), value());
        skip_ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = Json::Array;
      ++i_;
      skip_ws();
      if (peek() == ']') return ++i_, v;
      for (;;) {
        v.items.push_back(value());
        skip_ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = Json::String;
      v.string = string_body();
      return v;
    }
    if (c == 't') return literal("true"), v.type = Json::Bool, v.boolean = true, v;
    if (c == 'f') return literal("false"), v.type = Json::Bool, v;
    if (c == 'n') return literal("null"), v;
    v.type = Json::Number;
    v.number = number();
    return v;
  }
  std::string string_body() {
    expect('"');
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) error("unterminated string");
      char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++i_;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = 0;
          for (int k = 0; k < 4; ++k) {
            char h = peek();
            ++i_;
            if (!std::isxdigit(static_cast<unsigned char>(h))) error("bad \\u escape");
            code = code * 16 + (std::isdigit(static_cast<unsigned char>(h))
                                    ? h - '0'
                                    : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default:
          error("bad escape");
      }
    }
  }
  double number() {
    size_t start = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
    } else {
      if (!std::isdigit(static_cast<unsigned char>(peek()))) error("bad number");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++i_;
    }
    if (peek() == '.') {
      ++i_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) error("bad fraction");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) error("bad exponent");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++i_;
    }
    return std::stod(std::string(s_.substr(start, i_ - start)));
  }

  std::string_view s_;
  size_t i_ = 0;
};

TEST(ProfilerJson, CheckerRejectsMalformedText) {
  for (const char* bad : {"{", "{\"a\":}", "[1,]", "{\"a\" 1}", "[01]", "\"\\x\"", "[1] 2", "tru"})
    EXPECT_THROW(JsonParser(bad).parse(), std::runtime_error) << bad;
  Json ok = JsonParser(R"({"a":[1,-2.5e3,true,null,"x\"y\u0041"],"b":{}})").parse();
  ASSERT_EQ(ok.type, Json::Object);
  EXPECT_EQ(ok.get("a")->items.size(), 5u);
  EXPECT_EQ(ok.get("a")->items[4].string, "x\"yA");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_path(const char* tag) {
  return ::testing::TempDir() + "kiln_profile_" + tag + "_" + std::to_string(::getpid()) + ".json";
}

// Parses a trace and checks the fields every Chrome trace event needs. Returns the events.
std::vector<Json> check_trace(const std::string& text, Json* root_out = nullptr) {
  Json root = JsonParser(text).parse();
  EXPECT_EQ(root.type, Json::Object);
  const Json* events = root.get("traceEvents");
  EXPECT_TRUE(events && events->type == Json::Array);
  if (!events) return {};
  for (const Json& e : events->items) {
    EXPECT_EQ(e.type, Json::Object);
    const std::string ph = e.str("ph");
    EXPECT_TRUE(ph == "X" || ph == "i" || ph == "M") << ph;
    EXPECT_FALSE(e.str("name").empty());
    for (const char* key : {"pid", "tid"}) {
      const Json* v = e.get(key);
      EXPECT_TRUE(v && v->type == Json::Number) << key;
    }
    if (ph == "M") continue;
    EXPECT_FALSE(e.str("cat").empty());
    const Json* ts = e.get("ts");
    EXPECT_TRUE(ts && ts->type == Json::Number && ts->number >= 0);
    if (ph == "X") {
      const Json* dur = e.get("dur");
      EXPECT_TRUE(dur && dur->type == Json::Number && dur->number >= 0);
    }
    const Json* args = e.get("args");
    EXPECT_TRUE(args && args->type == Json::Object);
  }
  if (root_out) *root_out = root;
  return events->items;
}

// The total count of `op` over all threads in the trace's kilnOpTotals.
int64_t total_count(const Json& root, const std::string& op) {
  int64_t n = 0;
  const Json* totals = root.get("kilnOpTotals");
  EXPECT_TRUE(totals && totals->type == Json::Array);
  if (!totals) return 0;
  for (const Json& t : totals->items)
    if (t.str("name") == op) n += static_cast<int64_t>(t.get("count")->number);
  return n;
}

// Restores the default sampling and stops the profiler whatever a test did.
// Each test starts with no planning job in flight: a background compile (or the renderer's
// warm-up) left by an earlier test under KILN_JIT=1 would otherwise record its compile event into
// this test's trace.
struct ProfilerGuard {
  ProfilerGuard() {
    kiln::sync();
    kiln::tracer::wait_for_compiles();
  }
  ~ProfilerGuard() {
    prof::set_op_sampling(prof::kDefaultOpSampleEvery, prof::kDefaultOpSampleMinNs);
    try {
      prof::stop();
    } catch (...) {
    }
  }
};

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

TEST(Profiler, TraceHasOpsFromEveryThread) {
  ProfilerGuard guard;
  kiln::Tensor a = kiln::full({8}, 1.0f), b = kiln::full({8}, 2.0f);
  const std::string path = temp_path("threads");
  prof::set_op_sampling(1, kNever);  // every op becomes an event
  prof::start(path);
  EXPECT_TRUE(prof::enabled());
  for (int i = 0; i < 10; ++i) kiln::Tensor c = a + b;
  kiln::Tensor m = a * b;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) kiln::Tensor c = a + b;
    });
  for (auto& t : threads) t.join();
  prof::stop();
  EXPECT_FALSE(prof::enabled());

  Json root;
  std::vector<Json> events = check_trace(read_file(path), &root);
  int adds = 0, muls = 0;
  std::set<double> add_tids, named_tids;
  for (const Json& e : events) {
    if (e.str("ph") == "M" && e.str("name") == "thread_name")
      named_tids.insert(e.get("tid")->number);
    if (e.str("cat") != "op") continue;
    EXPECT_EQ(e.str("ph"), "X");
    EXPECT_TRUE(e.get("args")->get("seq"));
    if (e.str("name") == "add") {
      ++adds;
      add_tids.insert(e.get("tid")->number);
    }
    if (e.str("name") == "mul") ++muls;
  }
  EXPECT_EQ(adds, 50);
  EXPECT_EQ(muls, 1);
  EXPECT_EQ(add_tids.size(), 3u);  // the main thread and the two others, each with its own id
  for (double tid : add_tids) EXPECT_TRUE(named_tids.count(tid)) << tid;
  EXPECT_EQ(total_count(root, "add"), 50);
  EXPECT_EQ(total_count(root, "mul"), 1);
  std::remove(path.c_str());
}

TEST(Profiler, SamplingKeepsEveryNthOpAndCountsAll) {
  ProfilerGuard guard;
  kiln::Tensor a = kiln::full({4}, 1.0f);
  prof::set_op_sampling(10, kNever);
  prof::start("");
  for (int i = 0; i < 25; ++i) kiln::Tensor c = a - a;
  Json root;
  std::vector<Json> events = check_trace(prof::trace_json(), &root);
  std::vector<double> seqs;
  for (const Json& e : events)
    if (e.str("name") == "sub") seqs.push_back(e.get("args")->get("seq")->number);
  EXPECT_EQ(seqs, (std::vector<double>{0, 10, 20}));  // the first, then every 10th
  EXPECT_EQ(total_count(root, "sub"), 25);

  // A threshold of 0 ns samples every op whatever every_n says.
  prof::set_op_sampling(1000, 0);
  prof::start("");
  for (int i = 0; i < 5; ++i) kiln::Tensor c = a - a;
  int subs = 0;
  for (const Json& e : check_trace(prof::trace_json()))
    if (e.str("name") == "sub") ++subs;
  EXPECT_EQ(subs, 5);
  EXPECT_THROW(prof::set_op_sampling(0, 0), kiln::Error);
}

// Finds the one event of category `cat`; fails the test if there is not exactly one.
const Json* find_one(const std::vector<Json>& events, const std::string& cat,
                     const std::string& name) {
  const Json* found = nullptr;
  int n = 0;
  for (const Json& e : events)
    if (e.str("cat") == cat && e.str("name") == name) found = &e, ++n;
  EXPECT_EQ(n, 1) << cat << " " << name;
  return found;
}

TEST(Profiler, EveryEventKindProducesAValidEvent) {
  ProfilerGuard guard;
  const std::string path = temp_path("kinds");
  prof::start(path);
  const int64_t t = prof::now_ns();
  prof::record_flush("segment limit \"64\"\n", t, t + 1500);
  prof::record_cache_hit(0xabcdef);
  prof::record_cache_miss(0x1234);
  prof::record_interpret(0x1234, 17, 4096, t + 2000, t + 5000);
  prof::record_plan_run(0x1234, 17, 1024, t + 5000, t + 5500);
  prof::record_fallback("cond", "data-dependent predicate");
  prof::record_compile("cpu-asmjit", 0x1234, t, t + 250'000);
  std::thread([&] { prof::record_kernel_launch("fused_add_mul_0", t + 6000, t + 6500); }).join();
  prof::flush_now();  // writes while still collecting
  EXPECT_TRUE(prof::enabled());
  std::vector<Json> events = check_trace(read_file(path));

  const Json* flush = find_one(events, "flush", "flush");
  ASSERT_TRUE(flush);
  EXPECT_EQ(flush->str("ph"), "X");
  EXPECT_NEAR(flush->get("dur")->number, 1.5, 1e-9);  // microseconds, sub-µs precision
  EXPECT_EQ(flush->get("args")->str("reason"), "segment limit \"64\"\n");
  const Json* hit = find_one(events, "cache", "cache hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->str("ph"), "i");
  EXPECT_EQ(hit->get("args")->str("region"), "0x0000000000abcdef");
  const Json* miss = find_one(events, "cache", "cache miss");
  ASSERT_TRUE(miss);
  EXPECT_EQ(miss->get("args")->str("region"), "0x0000000000001234");
  const Json* interp = find_one(events, "interpret", "interpret");
  ASSERT_TRUE(interp);
  EXPECT_EQ(interp->get("args")->get("nodes")->number, 17);
  EXPECT_NEAR(interp->get("dur")->number, 3.0, 1e-9);
  EXPECT_EQ(interp->get("args")->get("peak_bytes")->number, 4096);
  const Json* run = find_one(events, "plan", "plan run");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->get("args")->get("nodes")->number, 17);
  EXPECT_EQ(run->get("args")->get("peak_bytes")->number, 1024);
  const Json* fb = find_one(events, "fallback", "cond");
  ASSERT_TRUE(fb);
  EXPECT_EQ(fb->str("ph"), "i");
  EXPECT_EQ(fb->get("args")->str("reason"), "data-dependent predicate");
  const Json* comp = find_one(events, "compile", "compile");
  ASSERT_TRUE(comp);
  EXPECT_EQ(comp->get("args")->str("tier"), "cpu-asmjit");
  EXPECT_NEAR(comp->get("dur")->number, 250.0, 1e-9);
  const Json* kern = find_one(events, "kernel", "fused_add_mul_0");
  ASSERT_TRUE(kern);
  EXPECT_EQ(kern->str("ph"), "X");
  // Recorded on another thread: its own track.
  EXPECT_NE(kern->get("tid")->number, flush->get("tid")->number);

  const std::string stats = prof::stats_text();
  for (const char* row : {"flush", "cache hit", "cache miss", "interpret", "fallback", "compile",
                          "kernel launch", "plan run", "data-dependent predicate"})
    EXPECT_NE(stats.find(row), std::string::npos) << row << "\n" << stats;
  // Region 0x1234: a miss, one interpretation of 3 µs, one compile of 250 µs.
  EXPECT_NE(stats.find("top regions by time (2 of 2)"), std::string::npos) << stats;
  EXPECT_NE(stats.find("0x0000000000001234        0        1          1        0.003        1"
                       "        0.250        1        0.001       4096 B       1024 B"),
            std::string::npos)
      << stats;
  prof::stop();
  std::remove(path.c_str());
}

// The count column of the stats row that starts with `name`, or -1.
int64_t stats_count(const std::string& stats, const std::string& name) {
  std::istringstream in(stats);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string first;
    int64_t count = -1;
    if (row >> first && first == name && row >> count) return count;
  }
  return -1;
}

TEST(Profiler, StatsNameOpsWithTheirCounts) {
  ProfilerGuard guard;
  kiln::Tensor a = kiln::full({3, 4}, 2.0f);
  prof::start("");
  for (int i = 0; i < 7; ++i) kiln::Tensor c = a * a;
  for (int i = 0; i < 3; ++i) kiln::Tensor c = kiln::exp(a);
  const std::string stats = prof::stats_text();
  EXPECT_NE(stats.find("top ops by time"), std::string::npos) << stats;
  EXPECT_EQ(stats_count(stats, "mul"), 7) << stats;
  EXPECT_EQ(stats_count(stats, "exp"), 3) << stats;
  EXPECT_EQ(stats_count(stats, "op"), 10) << stats;
}

TEST(Profiler, DisabledRecordsNothing) {
  ProfilerGuard guard;
  kiln::Tensor a = kiln::full({4}, 1.0f);
  prof::start("");
  prof::stop();  // empties the buffers at start, then stops
  ASSERT_FALSE(prof::enabled());
  for (int i = 0; i < 5; ++i) kiln::Tensor c = a + a;
  std::thread([&] { kiln::Tensor c = a * a; }).join();
  const int64_t t = prof::now_ns();
  prof::record_flush("off", t, t + 1);
  prof::record_cache_hit(1);
  prof::record_cache_miss(1);
  prof::record_interpret(1, 1, 0, t, t + 1);
  prof::record_plan_run(1, 1, 0, t, t + 1);
  prof::record_fallback("cond", "off");
  prof::record_compile("cpu", 1, t, t + 1);
  prof::record_kernel_launch("k", t, t + 1);
  Json root;
  std::vector<Json> events = check_trace(prof::trace_json(), &root);
  for (const Json& e : events) EXPECT_EQ(e.str("ph"), "M") << e.str("name");
  EXPECT_TRUE(root.get("kilnOpTotals")->items.empty());
  EXPECT_EQ(stats_count(prof::stats_text(), "op"), 0);
}

TEST(Profiler, UnwritableTraceIsAnError) {
  ProfilerGuard guard;
  prof::start("/nonexistent-kiln-dir/trace.json");
  try {
    prof::stop();
    FAIL() << "stop() did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-kiln-dir/trace.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("profiler"), std::string::npos);
  }
  EXPECT_FALSE(prof::enabled());
}

// KILN_PROFILE / KILN_STATS end to end: the test binary runs itself with the variables set and
// only ProfilerChild selected; kiln::init() starts the profiler from the config, and the trace and
// the stats are written when main returns.
TEST(ProfilerChild, RunsOps) {
  if (!std::getenv("KILN_TEST_PROFILER_CHILD")) GTEST_SKIP() << "run by ConfiguredOutputsAtExit";
  kiln::Tensor a = kiln::full({2}, 1.0f);
  for (int i = 0; i < 3; ++i) kiln::Tensor b = kiln::neg(a);
}

TEST(Profiler, ConfiguredOutputsAtExit) {
  const std::string path = temp_path("exit");
  const std::string err = temp_path("exit_stderr");
  std::remove(path.c_str());
  const kiln::testing::SelfChildResult child = kiln::testing::run_self_as_child(
      "KILN_TEST_PROFILER_CHILD=1 KILN_PROFILE='" + path + "' KILN_STATS=1",
      "ProfilerChild.RunsOps", err);
  ASSERT_EQ(child.status, 0) << child.command;
  ASSERT_EQ(child.completed, 1) << child.command;
  Json root;
  check_trace(read_file(path), &root);
  EXPECT_EQ(total_count(root, "neg"), 3);
  EXPECT_EQ(total_count(root, "fill"), 1);  // the first op, which started the profiler, counts
  const std::string stats = read_file(err);
  EXPECT_NE(stats.find("kiln stats"), std::string::npos) << stats;
  EXPECT_EQ(stats_count(stats, "neg"), 3) << stats;
  std::remove(path.c_str());
  std::remove(err.c_str());
}

}  // namespace

// A region's peak memory, interpreted and planned (KILN_STATS "interp peak" / "plan peak"): gelu
// written out of primitives over 64 Ki floats. The interpreter holds several intermediates at
// once; the plan's one kernel holds only its output.
TEST(Profiler, RegionPeakBytesInterpretedAndPlanned) {
  ProfilerGuard guard;
  kiln::sync();
  const bool saved_jit = kiln::config().jit, saved_async = kiln::config().jit_async;
  const int saved_threshold = kiln::config().jit_threshold;
  kiln::config().jit_async = false;
  kiln::config().jit_threshold = 1;  // interpreted once, then planned
  kiln::manual_seed(3);
  const kiln::Tensor x = kiln::randn({1 << 16});
  prof::start("");
  kiln::config().jit = true;
  for (int run = 0; run < 3; ++run) {
    kiln::Tensor u = (x + x * x * x * 0.044715) * 0.7978845608028654;
    kiln::Tensor y = x * 0.5 * (kiln::tanh(u) + 1);
    (void)y.sum().item<float>();
  }
  kiln::sync();
  kiln::config().jit = saved_jit;
  kiln::config().jit_async = saved_async;
  kiln::config().jit_threshold = saved_threshold;
  std::vector<Json> events = check_trace(prof::trace_json());
  int64_t interp = -1, plan = -1;
  for (const Json& e : events) {
    const Json* args = e.get("args");
    const Json* peak = args ? args->get("peak_bytes") : nullptr;
    if (peak == nullptr || args->get("nodes")->number < 8) continue;  // gelu's region
    int64_t& slot = e.str("name") == "interpret" ? interp : plan;
    slot = std::max(slot, static_cast<int64_t>(peak->number));
  }
  const int64_t buffer = int64_t{4} << 16;
  EXPECT_GE(interp, 2 * buffer);
  EXPECT_GE(plan, buffer);
  EXPECT_LT(plan, interp);
  const std::string stats = prof::stats_text();
  EXPECT_NE(stats.find("plan peak"), std::string::npos) << stats;
  EXPECT_NE(stats.find("planned run(s)"), std::string::npos) << stats;
}
