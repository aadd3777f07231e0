// Kernel disk cache entries written off the compiling thread. Writing an entry (create the
// folder, a temporary file, rename: jit/loop/disk_cache.h) cost 30-250 µs per kernel in
// kiln-perf on the 2-core Zen 5 VM (2026-12-03), as much as rendering the kernel, and it ran
// inside the first call that rendered it. The renderer hands the entry to one background thread
// of the process instead, and goes on.
//
// Contract:
// - The entry stays readable while it waits: DiskCache::hold() keeps it and DiskCache::read()
//   returns it, so a process that forgets its kernels loads them still (in memory or on disk).
// - Entries are written in the order they were queued, each by DiskCache::write_held() (its
//   stats, its failure handling: a folder that cannot be written turns writes off with one
//   warning, from the writer's thread).
// - At process exit (std::atexit, registered when the thread starts) the queued entries are
//   written before the process ends: a program whose first run is short still leaves its kernels
//   for the next. A process that dies abnormally loses what was queued (a cache: the next run
//   compiles those kernels again).
// - Where no thread can be started, the write happens on the caller's thread.
// - Like the planning thread (tracer/region_runner.cpp), the writer does not follow fork(): a
//   child forked without exec keeps the queue but not the thread (its flushes and its exit
//   write the queue on the calling thread), and one forked while an entry was being written
//   waits at exit for a write that only the parent finishes.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "jit/loop/disk_cache.h"

namespace kiln::jit {

// Queues `payload` for `material` in `cache`; nothing when the cache's writes are off.
void write_in_background(std::shared_ptr<DiskCache> cache, std::string material,
                         std::vector<char> payload);

// Returns once every entry queued before the call is written (it writes queued entries on the
// calling thread too). For a caller about to remove or replace a cache folder, tests, and exit.
void flush_disk_cache_writes();

// Tests: while paused, the background thread writes nothing (the queue waits for a flush, the
// exit, or the end of the pause).
void pause_disk_cache_writer_for_testing(bool paused);

}  // namespace kiln::jit
