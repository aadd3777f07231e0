// A recap of every failed test, printed once more after gtest's own summary.
//
// Why: the runs that execute a whole binary in one process (the asan shards, the per-ISA JIT
// passes) print thousands of lines, and a CI log that keeps only its head and tail loses the
// failure in the middle (2026-11-27: `kiln.asan_shard_1` failed in CI, and the kept output said
// only that one of 342 tests neither passed nor skipped). gtest's brief printer lists no
// failures at the end; this listener does, with each failed assertion's first lines.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

class FailureRecap : public ::testing::EmptyTestEventListener {
 public:
  // (The test's name is kept here: UnitTest::current_test_info() would take the lock that gtest
  // holds while it calls OnTestPartResult.)
  void OnTestStart(const ::testing::TestInfo& test) override {
    current_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestEnd(const ::testing::TestInfo&) override { current_ = "(outside a test)"; }

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    const std::string& where = current_;
    std::string message = result.message();
    constexpr std::size_t kKept = 600;  // enough for the usual EXPECT message and its values
    if (message.size() > kKept) message = message.substr(0, kKept) + " [...]";
    failures_.push_back(where + " at " + (result.file_name() ? result.file_name() : "?") + ":" +
                        std::to_string(result.line_number()) + "\n" + message);
  }

  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    if (failures_.empty()) return;
    std::fprintf(stderr, "\n[ RECAP    ] %zu failed assertion(s):\n", failures_.size());
    for (const std::string& f : failures_) std::fprintf(stderr, "[ RECAP    ] %s\n", f.c_str());
    std::fflush(stderr);
  }

 private:
  std::string current_ = "(outside a test)";
  std::vector<std::string> failures_;
};

// Registered before main() runs (gtest_main's main only initialises and runs): gtest owns it.
const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new FailureRecap);
  return true;
}();

}  // namespace
