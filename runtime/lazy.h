// Lazy storage and sync points: the seam between runtime/ and the recorder in tracer/.
//
// With KILN_JIT=1 an op returns a tensor whose metadata is known at once but whose Storage has no
// data yet: the Storage names the LazyProducer (a thread's recording segment) that will compute
// it. Reading data (Storage::data()) or reaching a sync point (item, to_vector, data_ptr,
// printing, kiln::sync()) makes the producer flush. runtime/ only knows this interface; the tracer
// implements it and registers its hooks in kiln::init().
#pragma once
#include <cstdint>

namespace kiln {

class Storage;
class Tensor;

// Why a segment was flushed (each flush is tagged with its reason for the profiler and stats).
enum class SyncReason : uint8_t {
  Item,           // Tensor::item
  ToVector,       // Tensor::to_vector
  DataPtr,        // data_ptr / mutable_data_ptr / raw_data
  Print,          // operator<< / str()
  Compare,        // allclose / equal (host-side comparison)
  Save,           // save_npy
  DataDependent,  // an op whose output shape depends on data (one_hot without num_classes)
  DataAccess,     // any other read of a lazy storage's data
  Sync,           // kiln::sync()
  SegmentLimit,   // the segment reached its node limit
  Aliasing,       // a write through one view of an input another view of it also reaches
  CrossThread,    // another thread used a tensor this thread's segment produces
  ModeChange,     // recording switched off (config().jit = false)
  ThreadExit,     // the recording thread ended
  HigherOrderOp,  // a higher-order op needed materialized inputs
  StridedRead,    // an op other than an elementwise one read an input written in place through
                  // a non-row-major layout: written back first, so that it reads that layout
                  // as eager does (a reduction's order follows it)
  kCount
};
const char* sync_reason_name(SyncReason r);

// A producer of lazy storages (tracer/segment.h). Both calls may come from any thread.
class LazyProducer {
 public:
  // Computes the storage's data (flushes), after which the storage is no longer lazy.
  virtual void materialize(Storage& s, SyncReason reason) = 0;
  // The storage is being destroyed while still lazy: its value is no longer needed.
  virtual void release(Storage& s) noexcept = 0;

 protected:
  ~LazyProducer() = default;
};

// The recorder's hook for sync points that do not name one storage (flush this thread's
// segment). Registered by the tracer in kiln::init(); null in a build without it.
using SyncHook = void (*)(SyncReason reason);
void set_sync_hook(SyncHook hook);

// The recorder's hook for a write into `t`'s memory that does not go through it (an eager op,
// mutable_data_ptr): other threads' segments that still read that memory run first, so that they
// read what eager mode would have. Registered by the tracer in kiln::init().
using WriteHook = void (*)(const Tensor& t);
void set_write_hook(WriteHook hook);
// Calls the write hook when `t`'s storage has pending readers (Storage::has_pending_readers).
void before_write(const Tensor& t);

// A sync point for `t`: flushes this thread's pending work and makes t's storage hold its data.
// Eager mode: no work (one load and a branch).
void sync_point(const Tensor& t, SyncReason reason);
// A sync point for everything this thread recorded (kiln::sync()).
void sync_thread(SyncReason reason);

}  // namespace kiln
