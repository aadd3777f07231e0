// The CPU kernel disk cache (jit/cpu/disk_cache.h): what a run renders, a later run (after the
// process forgot its kernels, or in another process, where the code lands at another address)
// loads instead of rendering, with the eager bits, and so does another program linking the same
// library (the entries are the library build's: its fingerprint); kernels that call out are stored
// with their callees named and get this process's addresses on load; the Compiler's code is never
// stored; a damaged entry is rendered again and rewritten; the key covers the renderer's build and
// every word of the render key; KILN_JIT_DISK_CACHE=0 stores nothing. The files' own failure modes
// (torn writes, unwritable folders, collisions) are the generic cache's, tested through the
// CUBIN cache (test_cuda_disk_cache.cpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "disk_cache_program.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/disk_cache.h"
#include "jit/cpu/render.h"
#include "jit/cpu/sample_kernels.h"
#include "jit/loop/disk_cache_writer.h"
#include "jit_recorded_util.h"
#include "kiln/kiln.h"
#include "log_capture.h"
#include "record_util.h"
#include "runtime/build_fingerprint.h"
#include "self_child.h"
#include "temp_dir.h"
#include "tracer/region_cache.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

int files_in(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it)
    n += it->path().filename().string()[0] != '.';
  return n;
}

// A pointwise chain with vector math, unrolled and software-pipelined on AVX-512, constants no
// other test uses (`salt`): its kernels are rendered here first.
TensorList chain_program(const Tensor& x, double salt) {
  Tensor y = x * (0.8046875 + salt);
  return TensorList{(y / ((y * -1.0).exp() + 1.0) + salt).tanh()};
}

// The parent's and the child's program: a chain, and a sin that calls out (huge arguments).
TensorList child_program(const Tensor& x) {
  TensorList out = chain_program(x, 0.00390625);
  out.push_back((x * 65536.015625).sin());
  return out;
}

// The counters a run changes.
struct Counts {
  int64_t renders, loads;
  static Counts now() {
    const jit::CpuJitCounters& c = jit::cpu_jit_counters();
    return {c.kernels.load(), c.disk_loads.load()};
  }
};

// A process that forgot its kernels and its plans: the next run plans anew and takes each
// kernel from the disk cache (or renders it).
void forget_everything() {
  tracer::wait_for_compiles();
  jit::flush_disk_cache_writes();
  tracer::RegionCache::instance().clear();
  jit::forget_cpu_kernels();
}

// Runs `program` `iterations` times against eager; the counters it moved.
Counts run_counted(const std::function<TensorList(int)>& program, int iterations,
                   const std::string& what) {
  const Counts before = Counts::now();
  testing::expect_iterations_match(program, iterations, what);
  jit::flush_disk_cache_writes();  // the entries are written in the background
  return {Counts::now().renders - before.renders, Counts::now().loads - before.loads};
}

// A later run of `program` in a process that forgot its plans and kernels: `stored` kernels
// loaded from the disk, none rendered.
void expect_loaded_not_rendered(const std::function<TensorList(int)>& program, int iterations,
                                const std::string& what, int64_t stored) {
  forget_everything();
  const Counts moved = run_counted(program, iterations, what);
  EXPECT_EQ(moved.renders, 0) << what << ": nothing rendered again";
  EXPECT_EQ(moved.loads, stored) << what;
}

// Pauses the background writer for a test and ends the pause however the test ends: a failed
// assertion must not leave an entry held mid-write, which every later flush would wait for.
struct WriterPaused {
  explicit WriterPaused(jit::WriterPause p) { jit::pause_disk_cache_writer_for_testing(p); }
  ~WriterPaused() { jit::pause_disk_cache_writer_for_testing(jit::WriterPause::None); }
  WriterPaused(const WriterPaused&) = delete;
  WriterPaused& operator=(const WriterPaused&) = delete;
};

class JitDiskCacheTest : public testing::JitRecordedTest<0> {
 protected:
  void SetUp() override {
    JitRecordedTest::SetUp();
    jit::set_cpu_kernel_disk_root(dir_.path());
  }
  void TearDown() override {
    JitRecordedTest::TearDown();
    jit::set_cpu_kernel_disk_root("");
  }
  std::string folder() const { return dir_.path() + "/cpu/" + jit::renderer_fingerprint(); }
  // A generic cache of the test's own (the writer's tests), in the folder `name`.
  std::shared_ptr<jit::DiskCache> test_cache(const char* name) const {
    const jit::DiskCacheFormat format{
        {'K', 'T', 'E', 'S', 'T', 0, 0, 0}, 1, name, "entry", "test cache"};
    return std::make_shared<jit::DiskCache>(dir_.path(), format);
  }
  // Runs the one test `filter` in a child process with the JIT, the disk cache in this test's
  // folder and the Assembler path on, and `flag`=1 (the variable the child test waits for).
  testing::SelfChildResult run_child(const std::string& flag, const std::string& filter) const {
    return testing::run_self_as_child(flag +
                                          "=1 KILN_JIT=1 KILN_JIT_DISK_CACHE=1 "
                                          "KILN_JIT_ASSEMBLER=1 KILN_CACHE_DIR='" +
                                          dir_.path() + "'",
                                      filter);
  }

  testing::TempDir dir_;
  testing::ConfigOverride<bool> on_{config().jit_disk_cache, true};
  // Only the Assembler path's code is stored: these tests take it whatever KILN_JIT_ASSEMBLER
  // says (the suite's Compiler pass, kiln.jit_compiler, sets 0).
  testing::ConfigOverride<bool> assembler_{config().jit_assembler, true};
};

TEST_F(JitDiskCacheTest, EntriesGoToTheLibrarysFingerprintFolder) {
  const std::string& f = jit::renderer_fingerprint();
  ASSERT_EQ(f.size(), 32u);
  EXPECT_EQ(f.find_first_not_of("0123456789abcdef"), std::string::npos) << f;
  EXPECT_EQ(f, kiln::build_fingerprint());
  ASSERT_NE(jit::cpu_kernel_disk_cache(), nullptr);
  EXPECT_EQ(jit::cpu_kernel_disk_cache()->folder(), folder());
}

TEST_F(JitDiskCacheTest, RenderedKernelsAreLoadedByALaterRun) {
  const Tensor x = testing::eager_normal({37, 301}, 71);
  auto program = [&](int) { return chain_program(x, 0.001953125); };
  const Counts first = run_counted(program, 2, "first run");
  ASSERT_GT(first.renders, 0);
  EXPECT_EQ(first.loads, 0);
  EXPECT_EQ(files_in(folder()), first.renders) << "one entry per rendering";
  expect_loaded_not_rendered(program, 2, "second run", first.renders);
}

// An entry waiting for the background writer (disk_cache_writer.h) is read from memory, and
// lands on disk when written: a process that forgets its kernels before the writer got to them
// loads them still. (Without the held copy read() misses and this fails; without write_held
// the file never appears.)
TEST_F(JitDiskCacheTest, AnEntryWaitingForItsWriteIsReadFromMemory) {
  auto cache = test_cache("held");
  const std::string material = "key material";
  const std::vector<char> payload{'c', 'o', 'd', 'e'};
  ASSERT_TRUE(cache->hold(material, payload));
  EXPECT_FALSE(fs::exists(cache->entry_path(material)));
  EXPECT_EQ(cache->read(material), payload) << "held: read from memory";
  EXPECT_TRUE(cache->write_held(material));
  EXPECT_TRUE(fs::exists(cache->entry_path(material)));
  EXPECT_FALSE(cache->write_held(material)) << "forgotten once written";
  EXPECT_EQ(cache->read(material), payload) << "from the file";
  EXPECT_EQ(cache->stats().writes, 1u);
  // Queued through the writer and read before any flush: in memory or on disk, never a miss.
  jit::write_in_background(cache, "second", {'x'});
  EXPECT_EQ(cache->read("second"), std::vector<char>{'x'});
  jit::flush_disk_cache_writes();
  EXPECT_TRUE(fs::exists(cache->entry_path("second")));
}

// A writer that does not keep up (paused here) holds at most kMaxQueuedDiskWrites entries: the
// render that finds the queue full writes its own entry (without the bound the file would wait
// for the flush).
TEST_F(JitDiskCacheTest, AFullQueueIsWrittenByTheCaller) {
  auto cache = test_cache("queued");
  std::optional<WriterPaused> paused(std::in_place, jit::WriterPause::BeforeTaking);
  for (size_t i = 0; i < jit::kMaxQueuedDiskWrites; ++i)
    jit::write_in_background(cache, "queued " + std::to_string(i), {'q'});
  EXPECT_FALSE(fs::exists(cache->entry_path("queued 0")));
  jit::write_in_background(cache, "one more", {'m'});
  EXPECT_TRUE(fs::exists(cache->entry_path("one more"))) << "written by the caller";
  EXPECT_FALSE(fs::exists(cache->entry_path("queued 0")));
  paused.reset();
  jit::flush_disk_cache_writes();
  EXPECT_TRUE(fs::exists(cache->entry_path("queued 0")));
  EXPECT_EQ(cache->stats().writes, jit::kMaxQueuedDiskWrites + 1);
}

// fork() while the writer's thread is in the middle of a write (held there by the test): that
// write is the parent's, and the child's flush (as its exit's) must not wait for it: the fork
// handlers give the child a writer of its own. Without them the child waits forever and is
// killed: a failure. (The child starts no thread: ThreadSanitizer refuses threads after a fork
// of a threaded process.) The parent's entry lands once its thread goes on.
TEST_F(JitDiskCacheTest, AChildForkedDuringAWriteDoesNotWaitForIt) {
  auto cache = test_cache("forked");
  std::optional<WriterPaused> paused(std::in_place, jit::WriterPause::AfterTaking);
  jit::write_in_background(cache, "parent", {'p'});
  for (int i = 0; i < 2000 && jit::disk_cache_writes_in_progress() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(jit::disk_cache_writes_in_progress(), 1);
  const pid_t child = ::fork();
  if (child == 0) {
    jit::flush_disk_cache_writes();
    ::_exit(jit::disk_cache_writes_in_progress() == 0 ? 0 : 3);
  }
  ASSERT_GT(child, 0);
  int status = -1;
  bool exited = false;
  for (int i = 0; i < 400 && !exited; ++i) {
    exited = ::waitpid(child, &status, WNOHANG) == child;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (!exited) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  paused.reset();
  jit::flush_disk_cache_writes();
  EXPECT_TRUE(exited) << "the child waited for the parent's write";
  EXPECT_TRUE(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(fs::exists(cache->entry_path("parent")));
}

// Run by AProcessThatExitsRightAwayLeavesItsKernels in a fresh process: renders with the
// writer paused (so nothing is on disk when the renders return: the writes are not theirs) and
// returns, no flush; only the exit can write what is queued.
class JitDiskCacheExitChild : public testing::JitRecordedTest<0> {};

TEST_F(JitDiskCacheExitChild, RendersAndExits) {
  if (std::getenv("KILN_TEST_DISK_CACHE_EXIT_CHILD") == nullptr)
    GTEST_SKIP() << "run by AProcessThatExitsRightAwayLeavesItsKernels";
  jit::pause_disk_cache_writer_for_testing(jit::WriterPause::BeforeTaking);
  for (int i = 0; i < 8; ++i)  // constants no other test uses
    jit::cpu_target().compile(jit::sample_kernels::gelu(0.4140625 + 0.0078125 * i));
  EXPECT_EQ(jit::cpu_jit_counters().kernels.load(), 8);
  EXPECT_EQ(files_in(jit::cpu_kernel_disk_cache()->folder()), 0) << "written at exit, not here";
}

TEST_F(JitDiskCacheTest, AProcessThatExitsRightAwayLeavesItsKernels) {
  const testing::SelfChildResult child =
      run_child("KILN_TEST_DISK_CACHE_EXIT_CHILD", "JitDiskCacheExitChild.RendersAndExits");
  ASSERT_EQ(child.status, 0) << child.command;
  ASSERT_EQ(child.completed, 1) << child.command;
  EXPECT_EQ(files_in(folder()), 8) << "the exit wrote every queued entry";
}

// Run by AnotherProcessLoadsTheKernelsAtOtherAddresses in a fresh process: the same program, its
// kernels loaded from the parent's entries (code placed wherever this process's JitRuntime puts
// it: address-space randomization moves everything), none rendered, eager's bits.
class JitDiskCacheChild : public testing::JitRecordedTest<0> {};

TEST_F(JitDiskCacheChild, LoadsWithoutRendering) {
  if (std::getenv("KILN_TEST_DISK_CACHE_CHILD") == nullptr)
    GTEST_SKIP() << "run by AnotherProcessLoadsTheKernelsAtOtherAddresses";
  const Tensor x = testing::eager_normal({37, 301}, 72);
  const Counts moved = run_counted([&](int) { return child_program(x); }, 2, "child");
  EXPECT_EQ(moved.renders, 0);
  EXPECT_GT(moved.loads, 0);
}

TEST_F(JitDiskCacheTest, AnotherProcessLoadsTheKernelsAtOtherAddresses) {
  const Tensor x = testing::eager_normal({37, 301}, 72);
  testing::expect_iterations_match([&](int) { return child_program(x); }, 2, "parent");
  jit::flush_disk_cache_writes();
  ASSERT_GT(files_in(folder()), 0);
  const testing::SelfChildResult child =
      run_child("KILN_TEST_DISK_CACHE_CHILD", "JitDiskCacheChild.LoadsWithoutRendering");
  EXPECT_EQ(child.status, 0) << child.command;
  EXPECT_EQ(child.completed, 1) << child.command;
}

// Another program linking the same library (kiln-disk-cache-peer) loads what this one rendered:
// the entries are the library build's (its fingerprint), not the program's, so relinking a
// program, or running another, keeps the kernels. The peer checks its results against its own
// eager run, bitwise.
TEST_F(JitDiskCacheTest, AnotherProgramLoadsTheKernels) {
  const Tensor x = testing::disk_cache_program_input();
  const Counts here =
      run_counted([&](int) { return testing::disk_cache_program(x); }, 2, "kiln-tests");
  ASSERT_GT(here.renders, 0);
  const std::string errors = dir_.path() + "/peer.stderr";
  const std::string command =
      std::string("'") + KILN_DISK_CACHE_PEER + "' '" + dir_.path() + "' 2>'" + errors + "'";
  std::FILE* peer = ::popen(command.c_str(), "r");
  ASSERT_NE(peer, nullptr) << command;
  char line[256] = {};
  const bool read = std::fgets(line, sizeof line, peer) != nullptr;
  const int status = ::pclose(peer);
  std::ifstream err(errors);
  const std::string err_text((std::istreambuf_iterator<char>(err)), {});
  ASSERT_TRUE(read) << command << "\n" << err_text;
  EXPECT_EQ(status, 0) << command << ": " << line << err_text;
  long long renders = -1, loads = -1;
  int equal = 0;
  ASSERT_EQ(std::sscanf(line, "renders %lld loads %lld equal %d", &renders, &loads, &equal), 3)
      << line;
  EXPECT_EQ(renders, 0) << line;
  EXPECT_EQ(loads, here.renders) << line;
  EXPECT_EQ(equal, 1) << "the peer's compiled results are not its eager ones: " << line;
}

// sin's kernel calls its huge-argument reduction: the entry names the callee, and a load writes
// this process's address of it into the code (call_targets.h). Arguments up to ~2.6e5 take the
// call (float sin reduces |x| > 6000 there).
TEST_F(JitDiskCacheTest, KernelsThatCallOutAreStoredWithTheirCallees) {
  const Tensor x = testing::eager_normal({19, 203}, 73);
  auto program = [&](int) { return TensorList{(x * 65536.0078125).sin()}; };
  const int64_t rendered = run_counted(program, 1, "sin").renders;
  ASSERT_GT(rendered, 0);
  EXPECT_EQ(files_in(folder()), rendered);
  expect_loaded_not_rendered(program, 1, "sin again", rendered);
}

// asmjit's Compiler places its own calls and relocations: its code is never stored.
TEST_F(JitDiskCacheTest, TheCompilersCodeIsNeverStored) {
  testing::ConfigOverride<bool> compiler(config().jit_assembler, false);
  const Tensor x = testing::eager_normal({13, 150}, 76);
  EXPECT_GT(run_counted([&](int) { return chain_program(x, 0.03125); }, 1, "compiler").renders, 0);
  EXPECT_EQ(files_in(folder()), 0);
}

// A flipped byte in an entry's code: the checksum catches it, the kernel is rendered again (with
// one warning per entry) and the entry rewritten; the damaged code never runs.
TEST_F(JitDiskCacheTest, DamagedEntryIsRenderedAgainAndRewritten) {
  const Tensor x = testing::eager_normal({23, 177}, 74);
  auto program = [&](int) { return chain_program(x, 0.0078125); };
  const int64_t rendered = run_counted(program, 1, "first run").renders;
  ASSERT_GT(rendered, 0);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(folder())) entries.push_back(e.path().string());
  ASSERT_EQ(static_cast<int64_t>(entries.size()), rendered);
  for (const std::string& path : entries) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    const char last = static_cast<char>(f.get());
    f.seekp(-1, std::ios::end);
    f.put(static_cast<char>(last ^ 0x10));
  }
  forget_everything();
  testing::JitLog log;
  const Counts damaged = run_counted(program, 1, "after the damage");
  EXPECT_EQ(damaged.renders, rendered);
  EXPECT_EQ(damaged.loads, 0);
  EXPECT_EQ(log.count("is damaged"), rendered) << log.text();
  EXPECT_EQ(files_in(folder()), rendered) << "rewritten";
  expect_loaded_not_rendered(program, 1, "from the rewritten entries", rendered);
}

// Renders on several threads store and load while another thread moves the cache between two
// folders and the background prunes run (under ThreadSanitizer in CI: the tsan preset's filter).
TEST_F(JitDiskCacheTest, RendersOnManyThreadsWhileTheFolderMoves) {
  testing::TempDir other;
  std::atomic<bool> done{false};
  std::thread mover([&] {
    for (int i = 0; !done.load(); ++i) {
      jit::set_cpu_kernel_disk_root(i % 2 ? dir_.path() : other.path());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<std::thread> renders;
  for (int t = 0; t < 4; ++t)
    renders.emplace_back([t] {
      for (int i = 0; i < 6; ++i)  // constants no other test uses: each a render or a load
        jit::cpu_target().compile(jit::sample_kernels::gelu(0.21875 + 0.0078125 * (t * 6 + i)));
    });
  for (std::thread& r : renders) r.join();
  done = true;
  mover.join();
  tracer::wait_for_compiles();  // the prunes
  // Each kernel went to exactly the folder its render looked in: loading all 24 from one folder,
  // then from the other, finds each exactly once.
  int64_t loads = 0;
  for (const std::string& root : {dir_.path(), other.path()}) {
    jit::set_cpu_kernel_disk_root(root);
    forget_everything();
    const Counts before = Counts::now();
    for (int k = 0; k < 24; ++k)
      jit::cpu_target().compile(jit::sample_kernels::gelu(0.21875 + 0.0078125 * k));
    loads += Counts::now().loads - before.loads;
    // What this pass renders, it writes here: the next pass (the other folder) is unaffected.
  }
  EXPECT_EQ(loads, 24);
}

// A cache folder that cannot be made (its path runs through a regular file): one warning, the
// kernels rendered and run as without a disk cache, the program's results unchanged.
TEST_F(JitDiskCacheTest, AFolderThatCannotBeWrittenCostsOneWarning) {
  const std::string file = dir_.path() + "/a-file";
  std::ofstream(file) << "x";
  jit::set_cpu_kernel_disk_root(file + "/kiln");
  testing::JitLog log;
  const Tensor x = testing::eager_normal({17, 190}, 77);
  const int64_t renders =
      run_counted([&](int) { return chain_program(x, 0.0625); }, 2, "unwritable").renders +
      run_counted([&](int) { return chain_program(x, 0.125); }, 1, "again").renders;
  EXPECT_GE(renders, 2);
  EXPECT_EQ(log.count("kept in memory only"), 1) << log.text();
}

TEST_F(JitDiskCacheTest, OffStoresAndLoadsNothing) {
  testing::ConfigOverride<bool> off(config().jit_disk_cache, false);
  EXPECT_EQ(jit::cpu_kernel_disk_cache(), nullptr);
  const Tensor x = testing::eager_normal({11, 130}, 75);
  auto program = [&](int) { return chain_program(x, 0.015625); };
  testing::expect_iterations_match(program, 1, "off");
  EXPECT_FALSE(fs::exists(folder()));
}

// A payload is the callees' places and the code (disk_cache.h): a real rendering's loads; one
// whose place is not a `movabs rax` immediate, whose callee is unknown, whose count runs past its
// end, or that is too short, loads nothing (the caller renders).
TEST(JitDiskCachePayload, LoadsARenderingAndRefusesMalformedOnes) {
  asmjit::JitRuntime rt;
  const jit::JitIsa isa = jit::active_jit_isa();
  const jit::LoopKernel k = jit::sample_kernels::sin_cos(0.6171875);
  const jit::KernelVariant v{isa, jit::all_contiguous(k), false, 1};
  const jit::RenderedKernel r = jit::render_cpu_kernel(rt, k, v, false, jit::RenderPath::Assembler);
  ASSERT_TRUE(r.relocatable);
  ASSERT_FALSE(r.addresses.empty()) << "sin's huge-argument call";
  const std::optional<std::vector<char>> payload = jit::cpu_kernel_payload(r);
  ASSERT_TRUE(payload.has_value());
  EXPECT_NE(jit::load_cpu_kernel(rt, *payload), nullptr);
  auto with_word = [&](size_t i, uint32_t w) {
    std::vector<char> p = *payload;
    std::memcpy(p.data() + 4 * i, &w, 4);
    return p;
  };
  uint32_t offset = 0;
  std::memcpy(&offset, payload->data() + 4, 4);
  EXPECT_EQ(jit::load_cpu_kernel(rt, with_word(1, offset + 1)), nullptr) << "not an immediate";
  EXPECT_EQ(jit::load_cpu_kernel(rt, with_word(2, 1000)), nullptr) << "unknown callee";
  EXPECT_EQ(jit::load_cpu_kernel(rt, with_word(0, 0x7fffffff)), nullptr) << "count past the end";
  EXPECT_EQ(jit::load_cpu_kernel(rt, std::vector<char>(3)), nullptr) << "too short";
}

// Each build keeps its entries in a folder of its own; opening the cache marks this build's as
// used, and all but the most recently used few other builds' folders go.
TEST(JitDiskCacheBuilds, OlderBuildsFoldersArePruned) {
  testing::TempDir dir;
  const fs::path builds = fs::path(dir.path()) / "cpu";
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 6; ++i) {  // build0 the newest
    const fs::path b = builds / ("build" + std::to_string(i));
    fs::create_directories(b);
    std::ofstream(b / "entry.v1.kernel") << "x";
    fs::last_write_time(b, now - std::chrono::hours(i + 1));
  }
  fs::create_directories(builds / jit::renderer_fingerprint());
  fs::last_write_time(builds / jit::renderer_fingerprint(), now - std::chrono::hours(100));
  EXPECT_EQ(jit::prune_cpu_kernel_builds(builds.string(), 3), 3);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(fs::exists(builds / ("build" + std::to_string(i))), i < 3) << i;
  EXPECT_TRUE(fs::exists(builds / jit::renderer_fingerprint())) << "the running build's stays";
  EXPECT_EQ(jit::prune_cpu_kernel_builds(builds.string(), 3), 0);
}

TEST(JitDiskCacheKey, CoversTheBuildAndEveryWord) {
  const std::vector<uint64_t> words{1, 2, 0x6370753a00000002ull, 3};
  const std::string m = jit::cpu_kernel_material(words, "abcd");
  EXPECT_EQ(m, jit::cpu_kernel_material(words, "abcd"));
  EXPECT_NE(m, jit::cpu_kernel_material(words, "abce"));
  for (size_t i = 0; i < words.size(); ++i) {
    std::vector<uint64_t> other = words;
    other[i] ^= 1ull << 40;
    EXPECT_NE(m, jit::cpu_kernel_material(other, "abcd")) << "word " << i;
  }
  std::vector<uint64_t> longer = words;
  longer.push_back(0);
  EXPECT_NE(m, jit::cpu_kernel_material(longer, "abcd"));
}

}  // namespace
}  // namespace kiln
