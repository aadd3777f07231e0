#include "tracer/segment.h"

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "ops/strided.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/profiler.h"
#include "tracer/body_tracer.h"
#include "tracer/canonicalize.h"
#include "tracer/hop_nodes.h"
#include "tracer/region_runner.h"

namespace kiln::tracer {

namespace {

// Where the storages of a flush that failed point: reading them raises the error again.
class FailedFlush final : public LazyProducer {
 public:
  explicit FailedFlush(std::string message) : message_(std::move(message)) {}
  void materialize(Storage&, SyncReason) override {
    throw Error(fmt::format(
        "this tensor's value could not be computed: a recorded op that produces it failed at an "
        "earlier sync point: {}",
        message_));
  }
  void release(Storage&) noexcept override {}

 private:
  std::string message_;
};

// Hands a computed buffer to a lazy storage: the buffer itself when it is a whole row-major
// block of the right size that nothing else shares (no other handle, no view: a graph input that
// a body passed through is the user's tensor), else a copy.
void hand_over(Storage& target, const Tensor& result, const DimVector& sizes, DType dtype) {
  const TensorImpl* r = result.impl();
  // A result of another shape or dtype than the slot's is a bug of the plan that computed it (a
  // planner once stored a 0-dim value with its row kernel's shape: docs/tracer.md); fail the
  // slot with it rather than copy a wrong geometry.
  KILN_CHECK(r->sizes() == sizes && r->dtype() == dtype,
             "recorder: a region's result {} {} does not match its tensor {} {}",
             shape_str(r->sizes()), dtype_name(r->dtype()), shape_str(sizes), dtype_name(dtype));
  Storage* rs = r->storage();
  const bool exact = r->offset() == 0 && r->is_contiguous() && r->sizes() == sizes &&
                     r->dtype() == dtype && rs->nbytes() == target.nbytes() &&
                     r->use_count() == 1 && rs->use_count() == 1 && !rs->is_lazy();
  if (exact) {
    target.adopt_data(rs->release_data());
    return;
  }
  Tensor tmp = empty_tensor(sizes, dtype, target.device());
  if (tmp.impl()->numel() > 0) {
    const Tensor src[] = {result};
    op_def(OpId::Copy).eager(OpCall{OpId::Copy, src, Attrs{}}, tmp);
  }
  target.adopt_data(tmp.impl()->storage()->release_data());
}

// Failed flushes live as long as the process: the storages pointing at them may outlive any
// owner we could give them (rare; one per failed flush). Held here, they are not leaks.
FailedFlush* keep_failure(std::string message) {
  static std::mutex mu;
  static auto* failures = new std::vector<std::unique_ptr<FailedFlush>>();
  std::lock_guard lock(mu);
  failures->push_back(std::make_unique<FailedFlush>(std::move(message)));
  return failures->back().get();
}

std::string describe_exception(const std::exception_ptr& e) {
  try {
    if (e) std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
  }
  return "unknown error";
}

}  // namespace

namespace {
// Epochs are unique across all segments, so a tensor's input note names one segment's flush.
std::atomic<uint32_t> g_next_epoch{1};
uint32_t next_epoch() {
  uint32_t e = g_next_epoch.fetch_add(1, std::memory_order_relaxed);
  return e != 0 ? e : g_next_epoch.fetch_add(1, std::memory_order_relaxed);  // 0 means "none"
}
}  // namespace

Segment::Segment() : epoch_(next_epoch()) { graph_.nodes.reserve(256); }

bool Segment::owns(const Storage* s) const {
  return s->producer() == this && s->lazy_epoch() == epoch_ &&
         s->lazy_slot() != Storage::kPendingWrites;
}

bool Segment::pending_here(const Storage* s) const {
  return s->producer() == this && s->lazy_epoch() == epoch_;
}

uint64_t Segment::stamp(const Slot& slot) const {
  return (static_cast<uint64_t>(epoch_) << 32) | slot.writes;
}

Segment::Input* Segment::find_input(const Tensor& t) {
  const uint64_t note = t.impl()->input_note().load(std::memory_order_relaxed);
  if ((note >> 32) == epoch_) return &inputs_[static_cast<uint32_t>(note)];
  Input* found = nullptr;
  any_input_of(t.impl()->storage(), [&](int32_t i) {
    if (!same_geometry(inputs_[i].tensor.impl(), t.impl())) return false;
    found = &inputs_[i];
    return true;
  });
  return found;
}

void Segment::index_input(int32_t index) {
  if (inputs_by_storage_.empty()) {
    if (inputs_.size() <= kScanInputs) return;
    for (size_t i = 0; i < inputs_.size(); ++i)  // crossing: index them all
      inputs_by_storage_[inputs_[i].tensor.impl()->storage()].push_back(static_cast<int32_t>(i));
    return;
  }
  inputs_by_storage_[inputs_[index].tensor.impl()->storage()].push_back(index);
}

Segment::Input& Segment::input_for(const Tensor& t) {
  if (Input* in = find_input(t)) return *in;
  const auto index = static_cast<uint32_t>(inputs_.size());
  inputs_.push_back(Input{t});
  index_input(static_cast<int32_t>(index));
  t.impl()->input_note().store((static_cast<uint64_t>(epoch_) << 32) | index,
                               std::memory_order_relaxed);
  return inputs_.back();
}

bool Segment::touches_written_input_elsewhere(const Tensor& t) const {
  return any_input_of(t.impl()->storage(), [&](int32_t i) {
    const Input& in = inputs_[i];
    return in.current != kNoValue && !same_geometry(in.tensor.impl(), t.impl());
  });
}

bool Segment::needs_aliasing_flush(const OpCall& call, const Tensor* out) const {
  if (written_inputs_ == 0) return false;
  for (const Tensor& t : call.inputs)
    if (!owns(t.impl()->storage()) && touches_written_input_elsewhere(t)) return true;
  return out && !owns(out->impl()->storage()) && touches_written_input_elsewhere(*out);
}

ValueId Segment::read(const Tensor& t) {
  const TensorImpl* ti = t.impl();
  Storage* s = ti->storage();
  if (owns(s)) {
    Slot& slot = slots_[s->lazy_slot()];
    if (ti->offset() == 0 && ti->is_contiguous() && ti->sizes() == slot.sizes) return slot.current;
    TensorImpl::RecordedValue& rec = ti->recorded();
    if (rec.value != kNoValue && rec.stamp == stamp(slot)) return rec.value;
    const ValueId base = slot.current;
    const ValueId v =
        append_node(OpId::AsStrided, strided_attrs(ti->sizes(), ti->strides(), ti->offset()),
                    {base}, meta_of(ti));
    rec = {stamp(slot), v};
    return v;
  }
  Input& in = input_for(t);
  if (in.current != kNoValue) return in.current;
  if (in.value == kNoValue) {
    in.value = graph_.add_input(meta_of(ti));
    s->add_pending_reader();
    graph_input_owner_.push_back(static_cast<int32_t>(&in - inputs_.data()));
  }
  return in.value;
}

void Segment::write(const Tensor& out, ValueId value) {
  const TensorImpl* o = out.impl();
  Storage* s = o->storage();
  if (owns(s)) {
    Slot& slot = slots_[s->lazy_slot()];
    if (o->offset() == 0 && o->is_contiguous() && o->sizes() == slot.sizes) {
      slot.current = value;
    } else {
      ValueMeta m;
      m.sizes = slot.sizes;
      m.dtype = o->dtype();
      m.device = o->device();
      slot.current =
          append_node(OpId::AsStridedScatter, strided_attrs(o->sizes(), o->strides(), o->offset()),
                      {slot.current, value}, m);
    }
    ++slot.writes;
  } else {
    Input& in = input_for(out);
    if (in.current == kNoValue) ++written_inputs_;
    in.current = value;
    s->mark_pending_writes(this, epoch_);  // reading it before the flush must flush
  }
  s->bump_version();
}

Tensor Segment::new_lazy(ValueId value, const OutputMeta& meta) {
  const auto slot = static_cast<uint32_t>(slots_.size());
  const size_t nbytes = static_cast<size_t>(numel_of(meta.sizes)) * itemsize(meta.dtype);
  auto storage = make_ref<Storage>(nbytes, meta.device, this, slot, epoch_);
  slots_.push_back(Slot{storage.get(), true, value, 0, meta.sizes, meta.dtype});
  return Tensor(make_ref<TensorImpl>(meta.sizes, meta.dtype, meta.device, std::move(storage)));
}

ValueId Segment::known_value(const Tensor& t) {
  const TensorImpl* ti = t.impl();
  const Storage* s = ti->storage();
  if (owns(s)) {  // computed by a followed node: of its remembered metadata
    const Slot& slot = slots_[s->lazy_slot()];
    const bool whole = ti->offset() == 0 && ti->is_contiguous() && ti->sizes() == slot.sizes;
    return whole ? slot.current : kNoValue;  // else read() records a view node
  }
  Input* in = find_input(t);
  if (in == nullptr) return kNoValue;
  if (in->current != kNoValue) return in->current;  // written by a followed node
  if (in->value == kNoValue) return kNoValue;       // not read yet
  // Checked once per remembered recording followed (following may switch to another one).
  const int entry = memo_.followed_entry();
  if (in->meta_known_in != entry) {
    if (!memo_.input_has_meta(in->value, in->tensor.impl())) return kNoValue;
    in->meta_known_in = entry;
  }
  return in->value;
}

bool Segment::known_meta(const OpDef& def, const OpCall& call, OutputMeta& meta) {
  std::lock_guard lock(mu_);
  known_ = {};
  if (!following_ || (def.flags & kIsView)) return false;
  const Node* n = memo_.node(followed_);
  if (n == nullptr || n->op != call.op || n->output != graph_.num_values() ||
      n->inputs.size() != call.inputs.size() ||
      !same_bits(n->attrs, call.attrs))  // a promoted scalar's new value too: follow() patches it
    return false;
  for (size_t i = 0; i < call.inputs.size(); ++i)
    if (n->inputs[i] == kNoValue || known_value(call.inputs[i]) != n->inputs[i]) return false;
  meta = n->meta;
  known_ = {&call, call.op, followed_, epoch_};
  known_metas_.store(known_metas_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

Tensor Segment::record(const OpDef& def, const OpCall& call, const OutputMeta& meta) {
  std::lock_guard lock(mu_);
  if (def.flags & kIsView) {
    // A view shares its input's storage; on a lazy input it is also a node, so that the graph
    // reads as the program did (transpose, slice) rather than as raw strides.
    Tensor out = run_eager(def, call, meta);
    Storage* s = call.inputs[0].impl()->storage();
    if (owns(s)) {
      const ValueId in = read(call.inputs[0]);
      const ValueId v = append_node(call.op, call.attrs, {in}, meta);
      out.impl()->recorded() = {stamp(slots_[s->lazy_slot()]), v};
    }
    return out;
  }
  if (needs_aliasing_flush(call, nullptr)) flush_locked(SyncReason::Aliasing);
  if (reads_layout_of_written_input(def, call)) flush_locked(SyncReason::StridedRead);
  ValueId v;
  if (known_.call == &call && known_.op == call.op && known_.node == followed_ &&
      known_.epoch == epoch_ && following_) {
    // known_meta compared this very call with the next remembered node (no flush since).
    recorded_.store(true, std::memory_order_relaxed);
    v = count_followed();
  } else {
    SmallVector<ValueId, 4> ids;
    for (const Tensor& t : call.inputs) ids.push_back(read(t));
    v = append_node(call.op, call.attrs, std::span<const ValueId>(ids.begin(), ids.size()), meta);
  }
  known_ = {};
  Tensor out = new_lazy(v, meta);
  if (node_count() >= config().jit_segment_limit) flush_locked(SyncReason::SegmentLimit);
  return out;
}

void Segment::record_into(const OpDef& def, const OpCall& call, const OutputMeta& meta,
                          Tensor& out) {
  std::lock_guard lock(mu_);
  if (needs_aliasing_flush(call, &out)) flush_locked(SyncReason::Aliasing);
  if (reads_layout_of_written_input(def, call)) flush_locked(SyncReason::StridedRead);
  SmallVector<ValueId, 4> ids;
  for (const Tensor& t : call.inputs) ids.push_back(read(t));
  ValueId r =
      append_node(call.op, call.attrs, std::span<const ValueId>(ids.begin(), ids.size()), meta);
  const DType out_dtype = out.impl()->dtype();
  if (meta.dtype != out_dtype) {  // eager computes in the result type, then casts into `out`
    Attrs cast;
    cast.dtype = out_dtype;
    ValueMeta m;
    m.sizes = meta.sizes;
    m.dtype = out_dtype;
    m.device = meta.device;
    r = append_node(OpId::Cast, cast, {r}, m);
  }
  write(out, r);
  if (node_count() >= config().jit_segment_limit) flush_locked(SyncReason::SegmentLimit);
}

bool Segment::reads_written_input(std::span<const Tensor> inputs,
                                  bool (*reads_alike)(const TensorImpl&)) {
  if (written_inputs_ == 0) return false;
  for (const Tensor& t : inputs) {
    const TensorImpl* ti = t.impl();
    if (owns(ti->storage()) || reads_alike(*ti)) continue;
    if (const Input* in = find_input(t); in != nullptr && in->current != kNoValue) return true;
  }
  return false;
}

bool Segment::reads_written_strided_input(std::span<const Tensor> inputs) {
  return reads_written_input(inputs, &has_fresh_layout);
}

bool Segment::reads_layout_of_written_input(const OpDef& def, const OpCall& call) {
  if (def.flags & kWritesAnyLayout) return false;
  return reads_written_input(call.inputs, [](const TensorImpl& t) {
    return is_contiguous_layout(t.sizes(), t.strides());
  });
}

std::vector<Tensor> Segment::record_hop(OpId op, const Attrs& attrs, Subgraphs bodies,
                                        std::span<const Tensor> inputs,
                                        std::span<const ValueMeta> results) {
  for (const Tensor& t : inputs) {  // another thread's lazy tensor is computed first
    Storage* s = t.impl()->storage();
    if (LazyProducer* p = s->producer(); p != nullptr && p != this)
      s->materialize(SyncReason::CrossThread);
  }
  std::lock_guard lock(mu_);
  if (needs_aliasing_flush(OpCall{op, inputs, attrs}, nullptr)) flush_locked(SyncReason::Aliasing);
  if (reads_written_strided_input(inputs)) flush_locked(SyncReason::HigherOrderOp);
  stop_following();  // a recording with bodies is never followed (tracer/flush_memo.h)
  recorded_.store(true, std::memory_order_relaxed);
  SmallVector<ValueId, 4> ids;
  for (const Tensor& t : inputs) ids.push_back(read(t));
  const ValueId tuple =
      graph_.add_node(op, attrs, std::span<const ValueId>(ids.begin(), ids.size()), tuple_meta(),
                      std::move(bodies));
  std::vector<Tensor> outs;
  outs.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const ValueMeta m = tuple_element_meta(results[i]);
    outs.push_back(new_lazy(graph_.add_node(OpId::TupleGet, tuple_get_attrs(i), {tuple}, m), m));
  }
  if (node_count() >= config().jit_segment_limit) flush_locked(SyncReason::SegmentLimit);
  return outs;
}

void Segment::flush(SyncReason reason) {
  // Nothing recorded since the last reset (every sync of a thread in the eager tier), and the
  // region cache not cleared since the memo was checked: nothing to run or drop, and no lock.
  if (surely_empty() && RegionCache::instance().generation() ==
                            memo_checked_generation_.load(std::memory_order_relaxed)) {
    last_flush_.store(0, std::memory_order_relaxed);
    return;
  }
  std::lock_guard lock(mu_);
  flush_locked(reason);
}

int64_t Segment::pending_nodes() {
  std::lock_guard lock(mu_);
  return node_count();
}

void Segment::flush_if_reading(const Storage* s, SyncReason reason) {
  std::lock_guard lock(mu_);
  if (any_input_of(s, [&](int32_t i) { return inputs_[i].value != kNoValue; }))
    flush_locked(reason);
}

void Segment::materialize(Storage& s, SyncReason reason) {
  if (speculating()) throw SpeculationAbort("it reads the data of a tensor recorded before it");
  std::lock_guard lock(mu_);
  if (pending_here(&s)) flush_locked(reason);
}

void Segment::release(Storage& s) noexcept {
  std::lock_guard lock(mu_);
  if (owns(&s)) slots_[s.lazy_slot()].alive = false;
}

void Segment::reset() {
  for (const Input& in : inputs_)
    if (in.value != kNoValue) in.tensor.impl()->storage()->drop_pending_reader();
  graph_.clear();
  memo_checked_generation_.store(RegionCache::instance().generation(), std::memory_order_relaxed);
  following_ = memo_.begin();
  followed_ = 0;
  slots_.clear();
  inputs_.clear();
  inputs_by_storage_.clear();
  graph_input_owner_.clear();
  written_inputs_ = 0;
  epoch_ = next_epoch();
  recorded_.store(false, std::memory_order_relaxed);
}

ValueId Segment::append_node(OpId op, const Attrs& attrs, std::span<const ValueId> inputs,
                             const ValueMeta& meta) {
  recorded_.store(true, std::memory_order_relaxed);
  if (following_) {
    if (memo_.follow(followed_, graph_.num_values(), op, attrs, inputs, meta))
      return count_followed();
    stop_following();
  }
  return graph_.add_node(op, attrs, inputs, meta);
}

ValueId Segment::count_followed() {
  const ValueId id = graph_.num_values();
  ++followed_;
  graph_.set_num_values(id + 1);
  return id;
}

void Segment::stop_following() {
  if (!following_) return;
  following_ = false;
  graph_.nodes.clear();
  memo_.copy_nodes(graph_, followed_);
  followed_ = 0;
}

// The tensors bound to the canonical graph's inputs, and which of them share storage
// (aliasing[i]: the first earlier input with input i's storage, or -1).
void Segment::graph_args(const CanonicalGraph& cg, std::vector<Tensor>& args,
                         std::vector<int32_t>& aliasing) const {
  args.clear();
  aliasing.clear();
  // Each argument's alias: the first earlier argument on the same storage (-1: none). A scan
  // for a few arguments; a map past that (a 48-layer region passes 578: the scan compared
  // ~167K pairs at every flush).
  constexpr size_t kScanLimit = 32;
  const bool scan = cg.input_origin.size() <= kScanLimit;
  std::unordered_map<const Storage*, int32_t> first;
  if (!scan) first.reserve(cg.input_origin.size());
  for (int32_t origin : cg.input_origin) {
    const Tensor& t = inputs_[graph_input_owner_[origin]].tensor;
    const Storage* s = t.impl()->storage();
    int32_t alias = -1;
    if (scan) {
      for (size_t j = 0; j < args.size(); ++j) {
        if (args[j].impl()->storage() == s) {
          alias = static_cast<int32_t>(j);
          break;
        }
      }
    } else {
      auto [at, added] = first.try_emplace(s, static_cast<int32_t>(args.size()));
      if (!added) alias = at->second;
    }
    aliasing.push_back(alias);
    args.push_back(t);
  }
}

void Segment::flush_locked(SyncReason reason) {
  if (node_count() == 0) {
    last_flush_.store(0, std::memory_order_relaxed);
    // A sync with nothing recorded since the last reset (every sync of a thread in the eager
    // tier) has nothing to drop; only a cleared cache changes what the memo offers.
    if (!slots_.empty() || !inputs_.empty() || following_ != memo_.followable()) reset();
    memo_checked_generation_.store(RegionCache::instance().generation(), std::memory_order_relaxed);
    return;
  }
  const int64_t t0 = profiler::now_ns();

  // Outputs: live lazy storages, then written inputs. The lists are the segment's, kept between
  // flushes with their room (a small loop's flush made a dozen heap allocations for them), and
  // emptied of their handles at the end (FlushScratch).
  FlushScratch& fs = scratch_;
  auto& live = fs.live;
  auto& live_slots = fs.live_slots;
  auto& outs = fs.outs;
  ScratchRelease release{fs};
  for (const Slot& slot : slots_) {
    if (!slot.alive) continue;
    if (Ref<Storage> r = Storage::try_ref(slot.storage)) {
      live.push_back(std::move(r));
      live_slots.push_back(&slot);
      outs.push_back(slot.current);
    }
  }
  auto& written = fs.written;
  for (const Input& in : inputs_) {
    if (in.current == kNoValue) continue;
    written.push_back(&in);
    outs.push_back(in.current);
    // The region reads the old contents; the new ones are written back below.
    in.tensor.impl()->storage()->clear_pending_writes();
  }
  graph_.set_outputs(outs);

  // Written inputs are computed in place when the interpreter can (interpret(), destinations).
  auto& destinations = fs.destinations;
  destinations.resize(outs.size());
  for (size_t i = 0; i < written.size(); ++i) destinations[live.size() + i] = written[i]->tensor;

  // A repeat of a remembered flush runs its canonical graph and region; anything else is
  // canonicalized and looked up, and remembered.
  bool hit = false;  // a region already cached (remembered, or found)
  auto run_graph = [&]() -> InterpretResult {
    std::vector<int32_t>& aliasing = fs.aliasing;
    std::vector<Tensor>& args = fs.args;
    if (following_ && memo_.completes_any(graph_, followed_)) {
      const CanonicalGraph& known = memo_.canonical();
      graph_args(known, args, aliasing);
      if (memo_.same_aliasing(aliasing)) {
        hit = true;
        memo_.ran_followed();
        RegionCache::instance().count_hit(memo_.region().get());
        return run_cached_region(CacheLookup{memo_.region(), true, false}, known.graph, args,
                                 destinations);
      }
      memo_.forget();  // the same recording over other aliasing: remembered anew below
    }
    stop_following();
    bool bodies = false;
    for (const Node& n : graph_.nodes) bodies = bodies || !n.subgraphs.empty();
    if (bodies) {  // never followed (FlushMemo::remember): no copy of the graph to remember
      CanonicalGraph cg = canonicalize(graph_);
      graph_args(cg, args, aliasing);
      // A new region takes the canonical graph instead of a copy of it.
      const CacheLookup found = RegionCache::instance().lookup_or_adopt(cg.graph, aliasing);
      return run_cached_region(found, graph_to_run(found, cg.graph), args, destinations);
    }
    Graph raw = graph_;  // canonicalize moves the nodes out
    CanonicalGraph cg = canonicalize(graph_);
    graph_args(cg, args, aliasing);
    const CacheLookup found = RegionCache::instance().lookup(cg.graph, aliasing);
    hit = found.hit;
    if (found.region == nullptr) return run_cached_region(found, cg.graph, args, destinations);
    memo_.remember(std::move(raw), std::move(cg), std::vector<int32_t>(aliasing), found.region);
    return run_cached_region(found, memo_.canonical().graph, args, destinations);
  };

  InterpretResult run;
  {
    EagerModeGuard eager;  // kernels may dispatch ops of their own: those run now
    try {
      run = run_graph();
    } catch (...) {  // the cache or the runner itself failed: nothing was computed
      run.error = std::current_exception();
      run.outputs.assign(outs.size(), Tensor());
    }
  }
  last_flush_.store(1 | (hit && run.planned ? 2 : 0), std::memory_order_relaxed);
  FailedFlush* failed = nullptr;
  auto fail = [&](Storage& s) {
    if (failed == nullptr) {
      failed = keep_failure(describe_exception(run.error));
    }
    s.rebind_producer(failed);
  };
  for (size_t i = 0; i < live.size(); ++i) {
    const Tensor& r = run.outputs[i];
    if (!r.defined()) {
      fail(*live[i]);
      continue;
    }
    try {
      hand_over(*live[i], r, live_slots[i]->sizes, live_slots[i]->dtype);
    } catch (...) {
      if (!run.error) run.error = std::current_exception();
      fail(*live[i]);
    }
  }
  const OpDef& copy = op_def(OpId::Copy);
  for (size_t i = 0; i < written.size(); ++i) {
    const Tensor& target = written[i]->tensor;
    const Tensor& r = run.outputs[live.size() + i];
    if (!r.defined() || target.impl()->numel() == 0) continue;  // a failed write leaves it as is
    if (r.impl() == target.impl()) continue;                    // computed in place
    if (r.impl()->sizes() != target.impl()->sizes() || r.dtype() != target.dtype()) {
      // As in hand_over: a plan's bug, reported instead of a copy of a wrong geometry.
      if (!run.error)
        run.error = std::make_exception_ptr(Error(
            fmt::format("recorder: a region's result {} {} does not match the written tensor {} {}",
                        shape_str(r.impl()->sizes()), dtype_name(r.dtype()),
                        shape_str(target.impl()->sizes()), dtype_name(target.dtype()))));
      continue;
    }
    const Tensor src[] = {r};
    copy.eager(OpCall{OpId::Copy, src, Attrs{}}, target);
  }
  reset();
  profiler::record_flush(sync_reason_name(reason), t0, profiler::now_ns());
  if (run.error) std::rethrow_exception(run.error);
}

}  // namespace kiln::tracer
