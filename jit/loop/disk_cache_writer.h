// Kernel disk cache entries written off the compiling thread. Writing an entry (create the
// folder, a temporary file, rename: jit/loop/disk_cache.h) cost 30-250 µs per kernel in
// kiln-perf on the 2-core Zen 5 VM (2026-12-03), as much as rendering the kernel, and it ran
// inside the first call that rendered it. The renderer hands the entry to one background thread
// of the process instead, and goes on. (Not the planning thread, tracer::run_in_background: its
// exit drops the jobs not started, and the writes would wait behind plans.)
//
// Contract:
// - The entry stays readable while it waits: DiskCache::hold() keeps it and DiskCache::read()
//   returns it, so a process that forgets its kernels loads them still (in memory or on disk).
// - Entries are taken in the order they were queued (a flush's thread may write one while the
//   writer's thread writes the one before), each written by DiskCache::write_held() (its stats,
//   its failure handling: a folder that cannot be written turns writes off with one warning,
//   from whichever thread wrote).
// - At process exit (std::atexit, registered when the thread starts) the queued entries are
//   written before the process ends: a program whose first run is short still leaves its kernels
//   for the next. A process that dies abnormally loses what was queued (a cache: the next run
//   compiles those kernels again).
// - Where no thread can be started, or kMaxQueuedDiskWrites entries already wait (the thread
//   not keeping up: a slow disk), the write happens on the caller's thread: what is held in
//   memory stays bounded.
// - fork(): a child forked without exec keeps the queue (its own copy: the parent writes the
//   same entries, and a rename makes the second write harmless) and starts a thread of its own
//   at its next write; an entry the parent's thread was writing is left to the parent.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "jit/loop/disk_cache.h"

namespace kiln::jit {

inline constexpr size_t kMaxQueuedDiskWrites = 256;

// Queues `payload` for `material` in `cache`; nothing when the cache's writes are off.
void write_in_background(std::shared_ptr<DiskCache> cache, std::string material,
                         std::vector<char> payload);

// Returns once the queue is empty and no write is in progress (entries queued meanwhile are
// written too; the calling thread writes queued entries itself). For a caller about to remove
// or replace a cache folder, tests, and exit.
void flush_disk_cache_writes();

// Tests: the background thread stops before taking an entry (BeforeTaking: the queue waits for
// a flush, the exit or the end of the pause) or after taking one and before writing it
// (AfterTaking: a write in progress; a flush waits for it, so end the pause first).
enum class WriterPause { None, BeforeTaking, AfterTaking };
void pause_disk_cache_writer_for_testing(WriterPause pause);
// Entries taken off the queue and not yet written.
int disk_cache_writes_in_progress();

}  // namespace kiln::jit
