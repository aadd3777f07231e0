#include "jit/loop/disk_cache_writer.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

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
  bool no_thread = false;  // the thread could not be started: callers write
  bool paused = false;     // tests: the thread takes nothing (flushes still write)
};

Writer& writer() {
  static auto* w = new Writer();  // never destroyed: the thread is detached
  return *w;
}

// Writes the queue's first entry, the lock released meanwhile.
void write_first(Writer& w, std::unique_lock<std::mutex>& lock) {
  Queued q = std::move(w.queue.front());
  w.queue.pop_front();
  ++w.writing;
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
    w.more.wait(lock, [&] { return !w.queue.empty() && !w.paused; });
    write_first(w, lock);
  }
}

void write_at_exit() { flush_disk_cache_writes(); }

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
  std::atexit(write_at_exit);
  return true;
}

}  // namespace

void write_in_background(std::shared_ptr<DiskCache> cache, std::string material,
                         std::vector<char> payload) {
  if (!cache->hold(material, std::move(payload))) return;
  Writer& w = writer();
  std::unique_lock lock(w.mu);
  if (!ensure_started(w)) {
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
  while (!w.queue.empty()) write_first(w, lock);
  w.idle.wait(lock, [&] { return w.queue.empty() && w.writing == 0; });
}

void pause_disk_cache_writer_for_testing(bool paused) {
  Writer& w = writer();
  std::lock_guard lock(w.mu);
  w.paused = paused;
  if (!paused) w.more.notify_all();
}

}  // namespace kiln::jit
