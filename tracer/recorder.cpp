#include "tracer/recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "runtime/config.h"
#include "runtime/dispatcher.h"
#include "tracer/body_tracer.h"
#include "tracer/eager_tier.h"
#include "tracer/hop_nodes.h"
#include "tracer/hop_recorder.h"
#include "tracer/segment.h"

namespace kiln::tracer {

namespace {

// Segments are reused by later threads and never freed (lazy storages keep plain pointers).
class SegmentPool {
 public:
  static Segment* acquire() {
    SegmentPool& p = instance();
    std::lock_guard lock(p.mu_);
    if (p.free_.empty()) {
      p.all_.push_back(new Segment());
      return p.all_.back();
    }
    Segment* s = p.free_.back();
    p.free_.pop_back();
    return s;
  }
  static void give_back(Segment* s) {
    SegmentPool& p = instance();
    std::lock_guard lock(p.mu_);
    p.free_.push_back(s);
  }
  // Every segment ever made (they are never freed, so the copy stays valid).
  static std::vector<Segment*> all() {
    SegmentPool& p = instance();
    std::lock_guard lock(p.mu_);
    return p.all_;
  }

 private:
  static SegmentPool& instance() {
    static SegmentPool* pool = new SegmentPool();
    return *pool;
  }
  std::mutex mu_;
  std::vector<Segment*> free_;
  std::vector<Segment*> all_;
};

// A tensor whose storage another segment produces is computed before this thread uses it.
void materialize_foreign(const Tensor& t, const Segment* mine) {
  Storage* s = t.impl()->storage();
  LazyProducer* p = s->producer();
  if (p != nullptr && p != mine) s->materialize(SyncReason::CrossThread);
}

// Before this thread records a write into a materialized tensor, other segments with pending
// reads of its memory run, so that they read what eager mode would have (the old contents).
// Called without holding any segment's lock, so two threads never wait on each other's.
void flush_other_readers(const Tensor& out, const Segment* mine) {
  const Storage* s = out.impl()->storage();
  if (!s->has_pending_readers() || s->producer() != nullptr) return;
  for (Segment* other : SegmentPool::all())
    if (other != mine) other->flush_if_reading(s, SyncReason::CrossThread);
}

class Recorder final : public ModeHandler {
 public:
  Recorder() : segment_(SegmentPool::acquire()), tier_(eager_lane) {
    eager_lane.bind(config(), segment_->pending_flag());
  }
  ~Recorder() override {
    if (current_mode() == this) set_current_mode(nullptr);
    try {
      segment_->flush(SyncReason::ThreadExit);
    } catch (...) {  // the values stay unreadable (FailedFlush); a thread's end must not throw
    }
    SegmentPool::give_back(segment_);
  }

  // Not asked while the eager tier runs the interval's ops (it would not record them).
  bool known_meta(const OpDef& def, const OpCall& call, OutputMeta& meta) override {
    if (tier_.running_eagerly()) {
      segment_->forget_known();  // no earlier answer is left for this call's record()
      return false;
    }
    return segment_->known_meta(def, call, meta);
  }

  // Ops on device tensors run eagerly (queued on the device's stream): segments, lazy storages
  // and the CPU planner are host-only (docs/cuda.md).
  Tensor handle(const OpDef& def, const OpCall& call, OutputMeta& meta) override {
    if (!meta.device.is_cpu()) [[unlikely]]
      return run_eager(def, call, meta);  // the lane stays as it is: device ops never count
    // The lane turned this op away (or it is closed): the tier decides again below. The
    // dispatcher did not ask known_meta for it, so no earlier answer is left for record().
    if (eager_lane.close()) segment_->forget_known();
    const Config& cfg = config();  // once per op: the eager tier's ops pay for every call
    if (!cfg.jit) [[unlikely]] {
      stop();
      return run_eager(def, call, meta);
    }
    // The tier runs the op as eager mode does: a foreign pending input materializes when the
    // kernel reads it (TensorImpl::data), so the scan below is for recording only.
    if (in_eager_tier(cfg, call, meta)) return run_eager(def, call, meta);
    for (const Tensor& t : call.inputs) materialize_foreign(t, segment_);
    return segment_->record(def, call, meta);
  }

  void handle_into(const OpDef& def, const OpCall& call, OutputMeta& meta, Tensor& out) override {
    eager_lane.close();  // in-place ops never take the lane: the tier decides
    if (!out.impl()->device().is_cpu()) [[unlikely]] {
      run_eager_into(def, call, meta, out);
      return;
    }
    const Config& cfg = config();
    if (!cfg.jit) [[unlikely]] {
      stop();
      // As EagerMode::handle_into: another thread's pending reads of `out` run first (they read
      // the old contents). RecordFuzz seed 1017435 (handed between threads, recording toggled
      // off before an in-place div_) read the new ones.
      flush_other_readers(out, segment_);
      run_eager_into(def, call, meta, out);
      return;
    }
    for (const Tensor& t : call.inputs) materialize_foreign(t, segment_);
    materialize_foreign(out, segment_);
    flush_other_readers(out, segment_);
    if (in_eager_tier(cfg, call, meta)) {
      run_eager_into(def, call, meta, out);
      return;
    }
    segment_->record_into(def, call, meta, out);
  }

  Segment& segment() { return *segment_; }
  EagerTier& tier() { return tier_; }

  // A sync point of this thread: its segment flushes between the two.
  void on_sync() { tier_.on_sync(); }
  void after_flush(bool ok) {
    const Segment::LastFlush f = segment_->last_flush();
    tier_.after_flush(ok, f.ran_graph, f.planned_hit);
    // The next interval runs eagerly from its first op when the tier says so (run_eagerly
    // would decide the same with nothing pending).
    if (tier_.running_eagerly() && segment_->surely_empty()) tier_.open_lane();
  }

 private:
  // Recording was switched off: run what is pending and return this thread to eager mode.
  void stop() {
    segment_->flush(SyncReason::ModeChange);
    if (current_mode() == this) set_current_mode(nullptr);
  }

  // Whether the eager tier runs this op now (tracer/eager_tier.h); counts it either way.
  bool in_eager_tier(const Config& cfg, const OpCall& call, const OutputMeta& meta) {
    if (!cfg.jit_eager_tier) [[unlikely]] {
      tier_.stop_running_eagerly();  // what the tier chose before it was switched off ends
      return false;
    }
    return tier_.run_eagerly(call.op, op_work(call, meta),
                             [&] { return segment_->surely_empty(); });
  }

  Segment* segment_;
  EagerTier tier_;
};

// The thread's recorder, created at its first recorded op and destroyed (flushing) at its exit.
thread_local std::unique_ptr<Recorder> t_recorder;

ModeHandler* recording_mode() {
  if (!t_recorder) t_recorder = std::make_unique<Recorder>();
  set_current_mode(t_recorder.get());
  return t_recorder.get();
}

void sync_hook(SyncReason reason) {
  if (speculating())
    throw SpeculationAbort(fmt::format("it reaches a sync point ({})", sync_reason_name(reason)));
  if (Recorder* r = t_recorder.get()) {
    r->on_sync();
    try {
      r->segment().flush(reason);
    } catch (...) {
      r->after_flush(false);
      throw;
    }
    r->after_flush(true);
  }
}

// A write that bypasses the recorder (an eager op, mutable_data_ptr). This thread's own pending
// reads are its business (mutable_data_ptr flushes them; a write under EagerModeGuard comes from
// inside a flush or an opaque callback of this thread).
void write_hook(const Tensor& t) {
  if (speculating()) return;  // a body's writes stay in its trace (or abort it)
  flush_other_readers(t, t_recorder ? &t_recorder->segment() : nullptr);
}

}  // namespace

void register_recorder() {
  register_hop_ops();
  set_recording_mode_provider(&recording_mode);
  set_sync_hook(&sync_hook);
  set_write_hook(&write_hook);
}

void flush_this_thread(SyncReason reason) { sync_hook(reason); }

HopRecorder* hop_recorder() {
  if (HopRecorder* body = current_body_tracer()) return body;
  if (!config().jit) return nullptr;
  ModeHandler* mode = current_mode();
  if (mode == nullptr) mode = recording_mode();
  auto* recorder = dynamic_cast<Recorder*>(mode);
  return recorder ? &recorder->segment() : nullptr;  // else an EagerModeGuard scope
}

EagerTier* eager_tier_this_thread() {
  Recorder* r = t_recorder.get();
  return r ? &r->tier() : nullptr;
}

int64_t known_metas_this_thread() {
  Recorder* r = t_recorder.get();
  return r ? r->segment().known_metas() : 0;
}

int64_t pending_ops_this_thread() {
  Recorder* r = t_recorder.get();
  return r ? r->segment().pending_nodes() : 0;
}

}  // namespace kiln::tracer
