#include "runtime/lazy.h"

#include <array>
#include <atomic>

#include "runtime/tensor.h"

namespace kiln {

namespace {
std::atomic<SyncHook> g_sync_hook{nullptr};
std::atomic<WriteHook> g_write_hook{nullptr};
}  // namespace

const char* sync_reason_name(SyncReason r) {
  static constexpr std::array<const char*, static_cast<size_t>(SyncReason::kCount)> kNames = {
      "item",
      "to_vector",
      "data_ptr",
      "print",
      "compare",
      "save",
      "data-dependent shape",
      "data access",
      "sync",
      "segment limit",
      "aliased write",
      "cross-thread",
      "recording off",
      "thread exit",
      "higher-order op",
      "strided read after write"};
  return kNames[static_cast<size_t>(r)];
}

void set_sync_hook(SyncHook hook) { g_sync_hook.store(hook, std::memory_order_release); }

void set_write_hook(WriteHook hook) { g_write_hook.store(hook, std::memory_order_release); }

void before_write(const Tensor& t) {
  if (!t.impl()->storage()->has_pending_readers()) return;
  if (WriteHook hook = g_write_hook.load(std::memory_order_acquire)) hook(t);
}

void sync_thread(SyncReason reason) {
  if (SyncHook hook = g_sync_hook.load(std::memory_order_acquire)) hook(reason);
}

void sync_point(const Tensor& t, SyncReason reason) {
  sync_thread(reason);
  if (t.defined()) t.impl()->storage()->materialize(reason);
}

}  // namespace kiln
