// fork() and kiln's own threads. A program that never starts a thread of its own still has
// kiln's (the background planning thread, the disk cache writer), so its fork() may copy a lock
// one of them holds, or a queue whose thread the child does not have. Each such piece registers
// here, and one pthread_atfork handler calls the pieces in a fixed order of stages: before the
// fork, stage by stage from the first (a stage's work may still need a later stage's locks: a
// plan being made renders kernels, queues disk writes and calls libxsmm); after it, in the
// parent and in the child, in the reverse order. The child of a fork has only the forking
// thread; what it inherits from kiln is consistent and its threads start again when needed.
// Threads a program starts itself are its own affair (POSIX: a child of a multi-threaded
// process calls only async-signal-safe functions), but for libxsmm's locks, which any thread
// calling a product may hold (ops/cpu/xsmm_gemm.cpp).
#pragma once

#include <new>

namespace kiln {

enum class ForkStage {
  Planning,    // tracer/region_runner.cpp: the plan being made finishes first
  DiskWrites,  // jit/loop/disk_cache_writer.cpp
  Libraries,   // ops/cpu/xsmm_gemm.cpp: no thread inside libxsmm
};

struct ForkHandlers {
  void (*prepare)() = nullptr;    // before fork(), in the forking thread
  void (*in_parent)() = nullptr;  // after it, in the parent
  void (*in_child)() = nullptr;   // after it, in the child (only the forking thread exists)
};

// Registers `handlers` for `stage` for the rest of the process (a forked child inherits them).
// Within a stage, handlers run in the order they were registered (after the fork: reversed).
// A fork takes no lock of the registry's: a registration may come from a thread that a prepare
// handler waits for (16 sets per stage at most; more: kiln::Error).
void on_fork(ForkStage stage, ForkHandlers handlers);

// Reconstructs `object` in place without destroying it: what the child of a fork does with a
// mutex or condition variable the parent's threads may have held or waited on (destroying a
// condition variable with waiters blocks; glibc's waits on its waiter counts in the child).
template <class T>
void remake_after_fork(T& object) {
  new (&object) T();
}

}  // namespace kiln
