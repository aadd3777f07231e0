#include "jit/loop/disk_cache_writer.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "runtime/fork_handlers.h"
#include "runtime/logging.h"

namespace kiln::jit {

namespace {

struct Queued {
  std::shared_ptr<DiskCache> cache;
  std::string material;
};

struct Writer {
  std::mutex mu;
  std::condition_variable more;  // an entry was queued
  std::condition_variable idle;  // the queue emptied with no write in progress
  std::deque<Queued> queue;
  int writing = 0;  // entries taken off the queue, not yet written
  bool started = false;
  bool no_thread = false;                 // the thread could not be started: callers write
  WriterPause pause = WriterPause::None;  // tests
};

void write_at_exit();
void before_fork();
void after_fork_in_parent();
void after_fork_in_child();

// Made with its exit and fork handlers (a forked child inherits them).
Writer& writer() {
  static auto* w = [] {
    auto* made = new Writer();  // never destroyed: the thread is detached
    std::atexit(write_at_exit);
    on_fork(ForkStage::DiskWrites, {before_fork, after_fork_in_parent, after_fork_in_child});
    return made;
  }();
  return *w;
}

// Writes the queue's first entry, the lock released meanwhile. `thread`: the writer's thread,
// which a test's WriterPause::AfterTaking stops between taking the entry and writing it.
void write_first(Writer& w, std::unique_lock<std::mutex>& lock, bool thread) {
  Queued q = std::move(w.queue.front());
  w.queue.pop_front();
  ++w.writing;
  if (thread) w.more.wait(lock, [&] { return w.pause != WriterPause::AfterTaking; });
  lock.unlock();
  q.cache->write_held(q.material);
  q.cache.reset();
  lock.lock();
  --w.writing;
  if (w.queue.empty() && w.writing == 0) w.idle.notify_all();
}

void work() {
  Writer& w = writer();
  std::unique_lock lock(w.mu);
  for (;;) {
    w.more.wait(lock, [&] { return !w.queue.empty() && w.pause != WriterPause::BeforeTaking; });
    write_first(w, lock, true);
  }
}

void write_at_exit() { flush_disk_cache_writes(); }

// fork(): the child has the queue but no thread, and an entry the parent's thread was writing
// is the parent's to finish (the child would wait for it at exit). The lock is held across the
// fork, so the child's copy of the state is consistent.
void before_fork() { writer().mu.lock(); }
void after_fork_in_parent() { writer().mu.unlock(); }
void after_fork_in_child() {
  Writer& w = writer();
  w.started = false;  // the child's next write starts a thread of its own
  w.writing = 0;
  remake_after_fork(w.mu);  // the parent's thread waited on these
  remake_after_fork(w.more);
  remake_after_fork(w.idle);
}

// Starts the thread once (under w.mu); false when it cannot be started.
bool ensure_started(Writer& w) {
  if (w.started) return !w.no_thread;
  w.started = true;
  try {
    std::thread(work).detach();
  } catch (const std::system_error& e) {
    w.no_thread = true;
    KILN_DEBUG(Jit, "disk cache writer: no thread ({}); entries are written by their renders",
               e.what());
    return false;
  }
  return true;
}

}  // namespace

void write_in_background(std::shared_ptr<DiskCache> cache, std::string material,
                         std::vector<char> payload) {
  if (!cache->hold(material, std::move(payload))) return;
  Writer& w = writer();
  std::unique_lock lock(w.mu);
  // No thread, or a queue the thread is not keeping up with (a slow disk): the caller writes,
  // so the entries held in memory stay bounded.
  if (!ensure_started(w) || w.queue.size() >= kMaxQueuedDiskWrites) {
    lock.unlock();
    cache->write_held(material);
    return;
  }
  w.queue.push_back({std::move(cache), std::move(material)});
  w.more.notify_one();
}

void flush_disk_cache_writes() {
  Writer& w = writer();
  std::unique_lock lock(w.mu);
  while (!w.queue.empty()) write_first(w, lock, false);
  w.idle.wait(lock, [&] { return w.queue.empty() && w.writing == 0; });
}

void pause_disk_cache_writer_for_testing(WriterPause pause) {
  Writer& w = writer();
  std::lock_guard lock(w.mu);
  w.pause = pause;
  w.more.notify_all();
}

int disk_cache_writes_in_progress() {
  Writer& w = writer();
  std::lock_guard lock(w.mu);
  return w.writing;
}

}  // namespace kiln::jit
