// A recording segment (DESIGN.md, "The flow of one op", steps 3-5): the ops one thread recorded
// since its last flush, as a Graph under construction, plus the bookkeeping that turns tensors
// into graph values and back.
//
// Buffer-level functionalization. Values are tracked per storage:
// - A lazy storage (an output of a recorded op) is a slot whose `current` value is its whole
//   content, row-major. Reading a tensor that views it gives `current`, the view op recorded on
//   it (while the slot was not written since), or an as_strided view of `current`. Writing into
//   it (an in-place op) records the op functionally and makes the result, or an
//   as_strided_scatter of it into `current`, the slot's new `current`.
// - A materialized storage the segment touches becomes graph inputs, one per geometry read.
//   Writing into one makes the written geometry's `current` the op's result; it is written back
//   into the user's memory after the region runs (a mutated input is an extra graph output).
//   Once a materialized storage is written, touching it through another geometry first flushes
//   (reason: aliased write), so reads of one geometry never miss a write through another.
//
// At a flush the graph's outputs are the slots whose storage is still alive (dead intermediates
// are never computed) and the written inputs; the interpreter's (or a compiled plan's) result
// buffers are then handed to the lazy storages, and written inputs are copied back.
//
// Threads: the owning thread records; any thread may materialize a storage (it flushes the whole
// segment) or drop the last handle to one. One lock guards the segment; the recorder never holds
// it while user code runs (tracer/spin_lock.h). Segments are pooled and never freed, so a storage's
// producer pointer is always safe to call.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/dispatcher.h"
#include "runtime/lazy.h"
#include "runtime/tensor.h"
#include "tracer/flush_memo.h"
#include "tracer/graph.h"
#include "tracer/hop_recorder.h"
#include "tracer/spin_lock.h"

namespace kiln::tracer {

class Segment final : public LazyProducer, public HopRecorder {
 public:
  Segment();

  // Records a functional op (the meta function already ran) and returns its lazy output.
  Tensor record(const OpDef& def, const OpCall& call, const OutputMeta& meta);
  // While the segment follows a remembered recording (flush_memo.h): when the op about to be
  // recorded is the next remembered node, with the same input values (each lazy one computed by
  // a node followed so far, each graph input of the remembered metadata) and the same attributes
  // bit for bit, its remembered output metadata, which the dispatcher takes instead of running
  // the meta function (ModeHandler::known_meta). The record() of that very call that follows
  // then only counts the node.
  bool known_meta(const OpDef& def, const OpCall& call, OutputMeta& meta);
  // Drops known_meta's last answer (the recording thread, which alone reads it).
  void forget_known() { known_ = {}; }
  // How many ops known_meta answered (tests; segments are reused by later threads).
  int64_t known_metas() const { return known_metas_.load(std::memory_order_relaxed); }
  // Records an in-place op writing into `out`.
  void record_into(const OpDef& def, const OpCall& call, const OutputMeta& meta, Tensor& out);
  // Records a higher-order node (tracer/hop_nodes.h) and returns its lazy results.
  std::vector<Tensor> record_hop(OpId op, const Attrs& attrs, Subgraphs bodies,
                                 std::span<const Tensor> inputs,
                                 std::span<const ValueMeta> results) override;
  // Runs everything recorded so far (no-op when nothing is pending).
  void flush(SyncReason reason);
  int64_t pending_nodes();
  // Without the lock: true only when nothing was recorded since the last flush. For the thread
  // that records into this segment (others only ever empty it): the eager tier asks it per op.
  bool surely_empty() const { return !recorded_.load(std::memory_order_relaxed); }
  // The flag surely_empty() reads, for the recorder's eager lane (runtime/eager_lane.h).
  const std::atomic<bool>& pending_flag() const { return recorded_; }
  // What the last flush ran (the eager tier times intervals by it: tracer/measured_tier.h).
  struct LastFlush {
    bool ran_graph = false;    // it had recorded work
    bool planned_hit = false;  // a compiled plan of a region already cached ran it
  };
  LastFlush last_flush() const {
    const uint8_t f = last_flush_.load(std::memory_order_relaxed);
    return LastFlush{(f & 1) != 0, (f & 2) != 0};
  }
  // Flushes when the pending work reads `s` as a graph input (another segment is about to
  // write it).
  void flush_if_reading(const Storage* s, SyncReason reason);

  void materialize(Storage& s, SyncReason reason) override;
  void release(Storage& s) noexcept override;

 private:
  struct Slot {
    Storage* storage = nullptr;  // not owned: release() tells when it dies
    bool alive = true;
    ValueId current = kNoValue;
    uint32_t writes = 0;
    DimVector sizes;
    DType dtype = DType::Float32;
  };
  struct Input {
    Tensor tensor;               // the user's tensor: its geometry, and where writes go back
    ValueId value = kNoValue;    // the graph input (kNoValue while never read)
    ValueId current = kNoValue;  // the value after the last write (kNoValue: never written)
    int meta_known_in = -2;  // the memo entry whose input `value` has its metadata (known_value)
  };

  bool owns(const Storage* s) const;          // a lazy slot of this segment
  bool pending_here(const Storage* s) const;  // a slot, or a storage with writes pending here
  uint64_t stamp(const Slot& slot) const;
  bool touches_written_input_elsewhere(const Tensor& t) const;
  bool needs_aliasing_flush(const OpCall& call, const Tensor* out) const;
  // A higher-order op's body was traced on its inputs' geometry, but a materialized input the
  // segment already wrote reads as a row-major value: such an input must be written back first.
  bool reads_written_strided_input(std::span<const Tensor> inputs);
  // Whether an op whose result may depend on its inputs' layout (any but an elementwise one:
  // kWritesAnyLayout) reads a materialized input the segment wrote through a layout that is not
  // row-major: it must be written back first. Eager reductions follow the input's memory layout
  // (ops/cpu/reduce_plan.h; BLAS takes a transpose as a flag), and the written value reads as a
  // row-major one here: its sum would add in another order than eager's.
  bool reads_layout_of_written_input(const OpDef& def, const OpCall& call);
  // Both: whether `inputs` hold a materialized input with a pending write whose geometry does not
  // read like its row-major value (`reads_alike` false).
  bool reads_written_input(std::span<const Tensor> inputs, bool (*reads_alike)(const TensorImpl&));
  Input* find_input(const Tensor& t);
  // The value `t` reads without recording anything (known_meta), or kNoValue: a lazy value of
  // this segment read whole, or a graph input already read whose metadata the remembered
  // recording's input of that value has.
  ValueId known_value(const Tensor& t);
  Input& input_for(const Tensor& t);
  ValueId read(const Tensor& t);
  void write(const Tensor& out, ValueId value);
  Tensor new_lazy(ValueId value, const OutputMeta& meta);
  // Appends a node to the graph, or only counts it while the recording repeats the last flush's.
  ValueId append_node(OpId op, const Attrs& attrs, std::span<const ValueId> inputs,
                      const ValueMeta& meta);
  ValueId append_node(OpId op, const Attrs& attrs, std::initializer_list<ValueId> inputs,
                      const ValueMeta& meta) {
    return append_node(op, attrs, std::span<const ValueId>(inputs.begin(), inputs.size()), meta);
  }
  // The next node repeats the remembered one: its output value, counted, not appended.
  ValueId count_followed();
  void stop_following();
  int64_t node_count() const { return static_cast<int64_t>(followed_ + graph_.nodes.size()); }
  void flush_locked(SyncReason reason);
  void graph_args(const CanonicalGraph& cg, std::vector<Tensor>& args,
                  std::vector<int32_t>& aliasing) const;
  // flush_locked's lists, kept with their room between flushes (under the segment's lock; a
  // flush never runs inside another of the same segment).
  struct FlushScratch {
    std::vector<Ref<Storage>> live;
    std::vector<const Slot*> live_slots;
    std::vector<ValueId> outs;
    std::vector<const Input*> written;
    std::vector<Tensor> destinations, args;
    std::vector<int32_t> aliasing;
  };
  // Empties the lists when a flush ends, returning or throwing: no handle outlives it.
  struct ScratchRelease {
    FlushScratch& fs;
    ~ScratchRelease() {
      fs.live.clear();
      fs.live_slots.clear();
      fs.outs.clear();
      fs.written.clear();
      fs.destinations.clear();
      fs.args.clear();
      fs.aliasing.clear();
    }
  };
  FlushScratch scratch_;
  void reset();

  SpinLock mu_;
  Graph graph_;
  std::vector<Slot> slots_;
  std::vector<Input> inputs_;
  std::vector<int32_t> graph_input_owner_;  // graph input i reads inputs_[graph_input_owner_[i]]
  // inputs_ by storage: a scan of inputs_ while there are at most kScanInputs (no allocation per
  // recorded input: a loop's small steps record a handful each run), this map beyond (built when
  // the count crosses it; empty before).
  static constexpr size_t kScanInputs = 32;
  std::unordered_map<const Storage*, std::vector<int32_t>> inputs_by_storage_;
  // Calls f(i) for each input i over storage s until it returns true; whether one did.
  template <class F>
  bool any_input_of(const Storage* s, F&& f) const {
    if (inputs_by_storage_.empty()) {
      for (size_t i = 0; i < inputs_.size(); ++i)
        if (inputs_[i].tensor.impl()->storage() == s && f(static_cast<int32_t>(i))) return true;
      return false;
    }
    auto it = inputs_by_storage_.find(s);
    if (it == inputs_by_storage_.end()) return false;
    for (int32_t i : it->second)
      if (f(i)) return true;
    return false;
  }
  void index_input(int32_t i);  // after inputs_[i] was added
  uint32_t epoch_;              // unique across segments (a global counter)
  int32_t written_inputs_ = 0;  // inputs with a pending write (none: no aliasing checks)
  FlushMemo memo_;              // the last few flushes (a loop's next iteration repeats them)
  bool following_ = false;      // the nodes so far repeat one of memo_'s (graph_ holds none)
  size_t followed_ = 0;         // how many
  // The call known_meta answered last, at which node of which recording (epoch_ changes at each
  // reset): record() of that call skips the comparison.
  struct Known {
    const OpCall* call = nullptr;
    OpId op{};
    size_t node = 0;
    uint32_t epoch = 0;
  } known_;
  std::atomic<int64_t> known_metas_{0};  // written by the recording thread only
  std::atomic<bool> recorded_{false};    // a node since the last reset (surely_empty())
  std::atomic<uint8_t> last_flush_{0};   // last_flush(): bit 0 ran_graph, bit 1 planned_hit
  // The region cache's generation when the memo was last checked against it (reset(), or an
  // empty flush): flush() skips an empty segment without its lock only while it holds, so that
  // a cleared cache's regions still go at the next sync (FlushMemo::begin).
  std::atomic<uint64_t> memo_checked_generation_{0};
};

}  // namespace kiln::tracer
