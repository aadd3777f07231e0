// Storage: a block of memory shared by a tensor and all its views, plus the version counter
// that in-place writes bump (shared by views, as in PyTorch).
//
// A CUDA storage holds a device address (from the device's caching allocator, for work on its
// stream); it is never lazy (the recorder runs CUDA ops eagerly).
//
// A storage is lazy while a recording segment has still to compute it, or to write into it
// (runtime/lazy.h): data() then asks the producer to flush first. The producer pointer is atomic
// because another thread may read a lazy tensor (it is materialized first) or drop the last handle
// to it.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/device.h"
#include "runtime/lazy.h"
#include "runtime/pooled.h"
#include "runtime/ref.h"

namespace kiln {

class Storage : public RefCounted, public PooledObject {
 public:
  Storage(size_t nbytes, Device device);  // allocates
  // A lazy storage: `producer` computes it; `slot` and `epoch` are the producer's bookkeeping.
  Storage(size_t nbytes, Device device, LazyProducer* producer, uint32_t slot, uint32_t epoch);
  ~Storage() override;

  // The data, computing it first if the storage is lazy (a sync point).
  void* data() const {
    if (lazy_.load(std::memory_order_acquire) != nullptr) [[unlikely]]
      materialize(SyncReason::DataAccess);
    return data_;
  }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  // ---- lazy state (for the producer) ----
  bool is_lazy() const { return lazy_.load(std::memory_order_acquire) != nullptr; }
  LazyProducer* producer() const { return lazy_.load(std::memory_order_acquire); }
  uint32_t lazy_slot() const { return slot_; }
  uint32_t lazy_epoch() const { return epoch_; }
  // Asks the producer for the data (no-op when not lazy).
  void materialize(SyncReason reason) const;
  // Producer only: installs the computed data (allocated by cpu_allocate for nbytes()) and
  // ends the lazy state. Takes ownership of `data`.
  void adopt_data(void* data);
  // Gives up ownership of the data (the interpreter hands a buffer it computed to a lazy
  // storage); the storage is left empty.
  void* release_data();
  // Producer only: a materialized storage with writes still pending in the producer is lazy
  // too (reading it flushes them); slot kPendingWrites marks it.
  static constexpr uint32_t kPendingWrites = ~0u;
  void mark_pending_writes(LazyProducer* producer, uint32_t epoch) {
    slot_ = kPendingWrites;
    epoch_ = epoch;
    lazy_.store(producer, std::memory_order_release);
  }
  void clear_pending_writes() { lazy_.store(nullptr, std::memory_order_release); }
  // Segments whose pending (unflushed) work reads this storage as a graph input: a write from
  // another thread's segment must flush them first, or they would read the new contents.
  void add_pending_reader() { readers_.fetch_add(1, std::memory_order_acq_rel); }
  void drop_pending_reader() { readers_.fetch_sub(1, std::memory_order_acq_rel); }
  bool has_pending_readers() const { return readers_.load(std::memory_order_acquire) > 0; }
  // Producer only: hands a still-lazy storage to another producer (a failed flush's).
  void rebind_producer(LazyProducer* producer) { lazy_.store(producer, std::memory_order_release); }

  // A strong reference if the storage is still alive (its count not yet at zero): producers
  // keep plain pointers to their storages and take a reference this way when they flush.
  static Ref<Storage> try_ref(Storage* s);

 private:
  void* data_ = nullptr;
  size_t nbytes_;
  Device device_;
  std::atomic<uint32_t> version_{0};
  std::atomic<LazyProducer*> lazy_{nullptr};
  std::atomic<int32_t> readers_{0};
  uint32_t slot_ = 0;
  uint32_t epoch_ = 0;
};

}  // namespace kiln
