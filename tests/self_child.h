// Running this test binary again in a fresh process, with one test selected: for what only a
// process's start-up or exit shows (kiln::init() reading the config, outputs written at exit).
//
// The child leaves gtest's sharding variables behind. A sharded parent (the asan shards,
// CMakePresets.json) would otherwise hand them down, and the child would shard its one selected
// test away and pass having run nothing: in CI on 2026-11-27 `Profiler.ConfiguredOutputsAtExit`
// moved into shard 1 when a test was added, its child ran no test and wrote no trace. So the
// result also says how many tests the child ran to completion (not skipped), from its JSON report.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace kiln::testing {

struct SelfChildResult {
  int status = -1;      // std::system's
  int completed = 0;    // tests that ran and were not skipped
  std::string command;  // for failure messages
};

// `env`: "NAME=value NAME2=value2" (shell words); `filter`: the one test, Suite.Name;
// `stderr_path`: where the child's stderr goes ("" for /dev/null).
inline SelfChildResult run_self_as_child(const std::string& env, const std::string& filter,
                                         const std::string& stderr_path = "") {
  char exe[4096] = {};
  SelfChildResult r;
  if (::readlink("/proc/self/exe", exe, sizeof(exe) - 1) <= 0) return r;
  const std::string report =
      ::testing::TempDir() + "kiln_child_" + std::to_string(::getpid()) + "_" + filter + ".json";
  std::remove(report.c_str());
  r.command = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX -u GTEST_SHARD_STATUS_FILE " + env +
              " '" + exe + "' --gtest_filter=" + filter + " --gtest_output=json:'" + report +
              "' > /dev/null 2> " + (stderr_path.empty() ? "/dev/null" : "'" + stderr_path + "'");
  r.status = std::system(r.command.c_str());
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  // gtest's JSON report gives each test a "result": "COMPLETED", "SKIPPED" or "SUPPRESSED".
  const std::string s = text.str(), done = "\"result\": \"COMPLETED\"";
  for (size_t at = s.find(done); at != std::string::npos; at = s.find(done, at + 1)) ++r.completed;
  std::remove(report.c_str());
  return r;
}

}  // namespace kiln::testing
