// Settings every test of kiln-tests starts from, where the library's defaults suit a program but
// not a suite of tests.
//
// The CPU kernel disk cache (jit/cpu/disk_cache.h) is off unless KILN_JIT_DISK_CACHE is set: with
// it on, a second run of the suite would load its kernels from ~/.cache/kiln instead of
// rendering them, and the tests that count renders, time them or inject codegen faults would
// test the disk instead. The disk cache's own tests (test_jit_disk_cache.cpp) turn it on in a
// folder of their own.
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/config.h"

namespace {

class SuiteDefaults : public ::testing::Environment {
 public:
  void SetUp() override {
    if (std::getenv("KILN_JIT_DISK_CACHE") == nullptr) kiln::config().jit_disk_cache = false;
  }
};

// Registered before main() runs (gtest_main's main only initialises and runs): gtest owns it.
::testing::Environment* const suite_defaults =
    ::testing::AddGlobalTestEnvironment(new SuiteDefaults);

}  // namespace
