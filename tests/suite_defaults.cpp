// Settings every test of kiln-tests starts from, where the library's defaults suit a program but
// not a suite of tests.
//
// The CPU kernel disk cache (jit/cpu/disk_cache.h) is off unless KILN_JIT_DISK_CACHE is set: with
// it on, a second run of the suite would load its kernels from ~/.cache/kiln instead of
// rendering them, and the tests that count renders, time them or inject codegen faults would
// test the disk instead. The disk cache's own tests (test_jit_disk_cache.cpp) turn it on in a
// folder of their own.
//
// The baseline tier (jit/cpu/baseline_kernel.h) is off unless KILN_JIT_BASELINE is set: with it
// on, a kernel's rendering moves to the planning thread after its first launches, and the tests
// that count renders or launches of rendered code, inject codegen faults or dump assembly right
// after a first call would see the baseline's launches instead. Its own tests
// (test_jit_baseline.cpp) turn it on; the whole suite runs under KILN_JIT_BASELINE=only too
// (docs/testing.md).
//
// Each test starts with no plan of an earlier test in flight: KILN_JIT_ASYNC plans regions on a
// background thread, and a plan still running when the next test begins renders its kernels
// under that test's settings and counters (2026-12-04, CI under ctest -j2: a test that dumps one
// kernel with KILN_DUMP=code found 7 files, the other 6 an earlier test's).
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/config.h"
#include "tracer/region_runner.h"

namespace {

class SuiteDefaults : public ::testing::Environment {
 public:
  void SetUp() override {
    if (std::getenv("KILN_JIT_DISK_CACHE") == nullptr) kiln::config().jit_disk_cache = false;
    if (std::getenv("KILN_JIT_BASELINE") == nullptr)
      kiln::config().jit_baseline = kiln::BaselineTier::Off;
  }
};

// Registered before main() runs (gtest_main's main only initialises and runs): gtest owns it.
::testing::Environment* const suite_defaults =
    ::testing::AddGlobalTestEnvironment(new SuiteDefaults);

class NoPlanInFlightAtStart : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo&) override { kiln::tracer::wait_for_compiles(); }
};

const bool no_plan_in_flight = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new NoPlanInFlightAtStart);
  return true;
}();

}  // namespace
