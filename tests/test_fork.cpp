// fork() under KILN_JIT=1 (runtime/fork_handlers.h): the handlers' order, a fork while a plan
// registers handlers, children forked while the background thread plans regions or after the
// parent's kernels ran on every thread, and a child that cannot start a planning thread: each
// must run the JIT and exit like any process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "kiln/kiln.h"
#include "record_util.h"
#include "runtime/config.h"
#include "runtime/fork_handlers.h"
#include "self_child.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

// How forked children ended: killed by their alarm (a hang), by another signal, or exiting
// with a status other than 0.
struct ChildEnds {
  int hung = 0, killed = 0, failed = 0;
  void wait_for(pid_t child) {
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) ++(WTERMSIG(status) == SIGALRM ? hung : killed);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) ++failed;
  }
  void expect_clean(const char* failed_means) const {
    EXPECT_EQ(hung, 0) << "children killed by their alarm (a hang)";
    EXPECT_EQ(killed, 0) << "children killed by another signal";
    EXPECT_EQ(failed, 0) << failed_means;
  }
};

// A forked child has only the forking thread: memory that the parent's other threads held (their
// thread caches, libxsmm's panels) is unreachable from it, and LeakSanitizer's check at a
// child's std::exit would call it leaked (and abort). Set in children; read at their exit.
bool g_forked_child = false;

// What the handlers below ran, in order, while the test arms them (other tests fork too, and
// registered handlers stay for the process's life).
std::atomic<bool> g_armed{false};
char g_calls[16];
std::atomic<int> g_count{0};
void note(char c) {
  if (!g_armed.load()) return;
  const int i = g_count.fetch_add(1);
  if (i < 16) g_calls[i] = c;
}

// Prepare: stages first to last, in registration order within one; after the fork, in the
// parent and in the child alike, the reverse (a later stage's locks are released first).
TEST(Fork, HandlersRunByStageThenReversed) {
  static const bool registered = [] {  // once a process: the registry only grows
    on_fork(ForkStage::Libraries, {[] { note('A'); }, [] { note('a'); }, [] { note('a'); }});
    on_fork(ForkStage::Planning, {[] { note('B'); }, [] { note('b'); }, [] { note('b'); }});
    on_fork(ForkStage::Planning, {[] { note('C'); }, [] { note('c'); }, [] { note('c'); }});
    return true;
  }();
  (void)registered;
  std::fflush(nullptr);
  g_count = 0;
  g_armed = true;
  const pid_t child = ::fork();
  if (child == 0) {
    g_armed = false;
    const std::string calls(g_calls, g_count.load());
    ::_exit(calls == "BCAacb" ? 0 : 3);
  }
  g_armed = false;
  ASSERT_GT(child, 0);
  EXPECT_EQ(std::string(g_calls, g_count.load()), "BCAacb");
  ChildEnds ends;
  ends.wait_for(child);
  ends.expect_clean("the child's order was wrong");
}

// Run by ARegistrationDuringAForkDoesNotWaitForIt in a fresh process (its registry grows): a
// planning job registers fork handlers (as a first render registers the disk cache writer's)
// while the test's thread forks, whose planning stage waits for that job. With the registry
// locked across the fork (before 2026-12-04) the two waited for each other: the alarm ends it.
TEST(ForkChild, ForksWhileAPlanningJobRegistersHandlers) {
  if (std::getenv("KILN_TEST_FORK_CHILD") == nullptr)
    GTEST_SKIP() << "run by Fork.ARegistrationDuringAForkDoesNotWaitForIt";
  ::alarm(30);
  std::atomic<bool> running{false}, forking{false};
  tracer::run_in_background([&] {
    running = true;
    while (!forking.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the fork is preparing
    on_fork(ForkStage::Libraries, {});
  });
  while (!running.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  forking = true;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ChildEnds ends;
  ends.wait_for(child);
  ends.expect_clean("the child did not exit cleanly");
  tracer::wait_for_compiles();
}

TEST(Fork, ARegistrationDuringAForkDoesNotWaitForIt) {
  const testing::SelfChildResult r = testing::run_self_as_child(
      "KILN_TEST_FORK_CHILD=1", "ForkChild.ForksWhileAPlanningJobRegistersHandlers");
  EXPECT_EQ(r.status, 0) << r.command;
  EXPECT_EQ(r.completed, 1) << r.command;
}

// A chain of 1-9 pointwise ops; `variant` picks which: consecutive variants make regions of
// other structures, so each one is planned anew.
Tensor chain(const Tensor& x, int variant) {
  Tensor t = x;
  const int length = 1 + variant % 9;
  for (int i = 0; i < length; ++i) {
    switch ((variant / 9 + i * (1 + variant % 4)) % 5) {
      case 0:
        t = t.sin();
        break;
      case 1:
        t = t * t + 0.5;
        break;
      case 2:
        t = (t * 0.25).exp();
        break;
      case 3:
        t = t.abs().sqrt();
        break;
      default:
        t = t.tanh() - 1.0;
        break;
    }
  }
  return t;
}

// What the tests below share: planning in the background at first sight, the eager tier off,
// the JIT restored after; an input of 4099 elements (a tail) made eagerly.
struct BackgroundPlanning {
  BackgroundPlanning() {
    kiln::sync();
    tracer::wait_for_compiles();
    testing::JitMode off(false);
    x = randn({4099});
  }
  testing::JitRestore restore;
  testing::ConfigOverride<bool> async{config().jit_async, true};
  testing::ConfigOverride<int> threshold{config().jit_threshold, 0};
  testing::ConfigOverride<bool> tier{config().jit_eager_tier, false};
  Tensor x;
};

// A child's exit status: 3 when its compiled result is not eager's, 4 when no kernel launched
// since `launched` (the region ran interpreted), else 0.
int child_status(const Tensor& got, const Tensor& eager, int64_t launched) {
  if (!allclose(got, eager, 1e-5, 1e-5)) return 3;
  return jit::cpu_jit_counters().launches.load() == launched ? 4 : 0;
}

// fork() right after a sync hands a new region to the background planner, so most forks come
// while a plan is being made. The child runs a new region through the JIT, planning it on its
// own thread or (but under ThreadSanitizer, which ends a child that starts a thread) on a
// worker of its own that it waits for, and checks it against eager. A quarter of the children
// exit through std::exit, whose handlers wait for any plan in progress; the rest leave with
// _exit (each exit runs libxsmm's finalization too, which unmaps every kernel it generated:
// ~250 ms per child after the suite's products). Before the planning queue had fork handlers,
// a child forked mid-plan inherited "a job is running" with no thread to finish it, and hung at
// that wait or that exit: killed by its alarm, counted as hung (20 of 20 on the 2-core Zen 5 VM).
TEST(Fork, ChildOfAProcessPlanningRegionsRunsTheJitAndExits) {
  const BackgroundPlanning planning;
  const Tensor& x = planning.x;
  config().jit = true;
  ChildEnds ends;
  for (int f = 0; f < 48; ++f) {
    (void)chain(x, f).sum().item<float>();  // a sync: the region's plan is queued
    std::fflush(nullptr);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      g_forked_child = true;
      ::alarm(10);
#if defined(__SANITIZE_THREAD__)
      config().jit_async = false;
#else
      config().jit_async = f % 2 == 0;
#endif
      const int64_t launched = jit::cpu_jit_counters().launches.load();
      Tensor got;
      for (int run = 0; run < 2; ++run) {  // planned (and compiled, planning here), then run
        got = chain(x, f + 1) * 2.0;
        kiln::sync();
        if (config().jit_async) tracer::wait_for_compiles();
      }
      config().jit = false;
      const Tensor eager = chain(x, f + 1) * 2.0;
      const int code = child_status(got, eager, launched);
      if (f % 4 == 1) std::exit(code);
      ::_exit(code);
    }
    ends.wait_for(child);
  }
  tracer::wait_for_compiles();
  ends.expect_clean("children whose region was wrong or not compiled");
}

// A forked child that cannot start a planning thread (refused by the test's hook, as when the
// process is out of threads) still plans its regions: its wait for compiles runs the queued plan
// itself, and the region then runs compiled. Without that, the wait waited for a thread that
// never came: the alarm.
TEST(Fork, AChildWithoutAPlanningThreadPlansWhenItWaits) {
  const BackgroundPlanning planning;
  const Tensor& x = planning.x;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(20);
    tracer::refuse_planning_thread_for_testing(true);
    config().jit = true;
    const int64_t launched = jit::cpu_jit_counters().launches.load();
    Tensor got;
    for (int run = 0; run < 2; ++run) {
      got = (chain(x, 40) + x).cos() * 3.0;
      kiln::sync();
      tracer::wait_for_compiles();
    }
    config().jit = false;
    const Tensor eager = (chain(x, 40) + x).cos() * 3.0;
    const int code = child_status(got, eager, launched);
    ::_exit(code);
  }
  ChildEnds ends;
  ends.wait_for(child);
  ends.expect_clean("the child's region was wrong (3) or not compiled (4)");
}

// A child forked after the parent's kernels ran on every thread (oneTBB's workers, OpenBLAS's
// or libxsmm's products split over kiln's threads) runs large ops on many threads itself, eager
// and compiled: a data loader's worker processes do. Each child checks its results against the
// parent's, made before the fork, under an alarm.
TEST(Fork, ChildRunsLargeOpsOnItsThreads) {
  kiln::sync();
  tracer::wait_for_compiles();
  testing::JitRestore restore;
  Tensor x, w, want_gelu, want_mm;
  {
    testing::JitMode off(false);
    x = randn({1 << 22});
    w = randn({512, 512});
    want_gelu = gelu(x);  // on every thread
    want_mm = matmul(w, w);
  }
  ChildEnds ends;
  for (int jit = 0; jit < 2; ++jit) {
    std::fflush(nullptr);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::alarm(20);
      config().jit = jit == 1;
      config().jit_async = false;
      bool right = true;
      for (int run = 0; run < 3; ++run) {  // (compiled from the first, in jit)
        right = right && allclose(gelu(x), want_gelu, 1e-5, 1e-6) &&
                allclose(matmul(w, w), want_mm, 1e-5, 1e-4);
      }
      ::_exit(right ? 0 : 3);
    }
    ends.wait_for(child);
  }
  ends.expect_clean("children with wrong results");
}

}  // namespace
}  // namespace kiln

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer's hook, read at exit: no leak check in a forked child (g_forked_child).
extern "C" int __lsan_is_turned_off() { return kiln::g_forked_child ? 1 : 0; }
#endif
