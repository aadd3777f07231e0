#include "tracer/body_tracer.h"

#include <unordered_map>

#include "runtime/autograd/record.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/lazy.h"
#include "runtime/philox.h"
#include "runtime/storage.h"
#include "tracer/canonicalize.h"
#include "tracer/hop_nodes.h"
#include "tracer/hop_recorder.h"

namespace kiln::tracer {

namespace {

thread_local int t_speculation_depth = 0;

// Where the storages of a finished trace point: a body tensor kept past its trace (stored into
// an outer variable by the callable) cannot be read.
class EscapedBodyValue final : public LazyProducer {
 public:
  void materialize(Storage&, SyncReason) override {
    throw Error(
        "a tensor made inside a higher-order op's traced body was used outside the body; return "
        "it from the body instead");
  }
  void release(Storage&) noexcept override {}
};
EscapedBodyValue g_escaped;

class BodyTracer final : public ModeHandler, public LazyProducer, public HopRecorder {
 public:
  BodyTracer() : saved_mode_(current_mode()) {
    set_current_mode(this);
    ++t_speculation_depth;
  }
  ~BodyTracer() override {
    --t_speculation_depth;
    set_current_mode(saved_mode_);
    for (const Tensor& t : keep_) {
      Storage* s = t.impl()->storage();
      if (s->producer() == this) s->rebind_producer(&g_escaped);
    }
  }
  BodyTracer(const BodyTracer&) = delete;
  BodyTracer& operator=(const BodyTracer&) = delete;

  // A stand-in for an argument: lazy (reading it aborts), with the argument's geometry.
  Tensor placeholder(const Tensor& like) {
    const TensorImpl* l = like.impl();
    auto storage = make_ref<Storage>(l->storage()->nbytes(), l->device(), this, 0, 0);
    Tensor t(make_ref<TensorImpl>(l->sizes(), l->strides(), l->offset(), l->dtype(), l->device(),
                                  std::move(storage)));
    bind(t, graph_.add_input(meta_of(l)));
    arguments_.push_back(t.impl());
    return t;
  }

  // The body value `t` is, lifting it to a capture input when the body did not make it.
  ValueId value_of(const Tensor& t) {
    auto it = values_.find(t.impl());
    if (it != values_.end()) return it->second;
    const ValueId v = graph_.add_input(meta_of(t.impl()));
    captures_.push_back(t);
    bind(t, v);
    return v;
  }

  TracedBody finish(const std::vector<Tensor>& outputs, size_t direct) {
    TracedBody body;
    std::vector<ValueId> outs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].defined()) throw SpeculationAbort("the body returned an undefined tensor");
      // The op's results are new row-major tensors: a result that eagerly is a strided view, or
      // that shares memory with another result, would lose that layout or aliasing. (Outputs
      // past `direct` are stacked over steps, which copies them anyway.)
      if (i < direct) check_direct_result(outputs, i);
      outs.push_back(value_of(outputs[i]));
      body.results.push_back(graph_.meta(outs.back()));
      ValueMeta& r = body.results.back();
      if (r.strides.empty()) r.strides = contiguous_strides(r.sizes);
    }
    graph_.set_outputs(outs);
    body.graph = prune_dead_nodes(graph_);
    body.captures = captures_;
    return body;
  }

  Tensor handle(const OpDef& def, const OpCall& call, OutputMeta& meta) override {
    check_traceable(def, call);
    SmallVector<ValueId, 4> ids;
    for (const Tensor& t : call.inputs) ids.push_back(value_of(t));
    Tensor out = (def.flags & kIsView) ? run_eager(def, call, meta) : new_value(meta);
    bind(out, graph_.add_node(call.op, call.attrs,
                              std::span<const ValueId>(ids.begin(), ids.size()), meta));
    return out;
  }

  void handle_into(const OpDef& def, const OpCall& call, OutputMeta& meta, Tensor& out) override {
    check_traceable(def, call);
    // Only a tensor the body made, that no view of it shares, is rebound to the new value
    // (functionalization at its simplest); anything else would need write-back.
    auto it = values_.find(out.impl());
    const bool own = it != values_.end() && out.impl()->storage()->producer() == this &&
                     out.impl()->storage()->use_count() == 1 && !is_argument(out.impl());
    if (!own) {
      throw SpeculationAbort(it == values_.end() || is_argument(out.impl())
                                 ? "it writes into a tensor from outside the body (or into its "
                                   "own argument)"
                                 : "it writes through a view inside the body");
    }
    SmallVector<ValueId, 4> ids;
    for (const Tensor& t : call.inputs) ids.push_back(value_of(t));
    ValueId r = graph_.add_node(call.op, call.attrs,
                                std::span<const ValueId>(ids.begin(), ids.size()), meta);
    if (meta.dtype != out.impl()->dtype()) {
      Attrs cast;
      cast.dtype = out.impl()->dtype();
      ValueMeta m;
      m.sizes = meta.sizes;
      m.dtype = cast.dtype;
      m.device = meta.device;
      r = graph_.add_node(OpId::Cast, cast, {r}, m);
    }
    values_[out.impl()] = r;
  }

  std::vector<Tensor> record_hop(OpId op, const Attrs& attrs, Subgraphs bodies,
                                 std::span<const Tensor> inputs,
                                 std::span<const ValueMeta> results) override {
    SmallVector<ValueId, 4> ids;
    for (const Tensor& t : inputs) ids.push_back(value_of(t));
    const ValueId tuple =
        graph_.add_node(op, attrs, std::span<const ValueId>(ids.begin(), ids.size()), tuple_meta(),
                        std::move(bodies));
    std::vector<Tensor> outs;
    for (size_t i = 0; i < results.size(); ++i) {
      const ValueMeta m = tuple_element_meta(results[i]);
      Tensor out = new_value(m);
      bind(out, graph_.add_node(OpId::TupleGet, tuple_get_attrs(i), {tuple}, m));
      outs.push_back(out);
    }
    return outs;
  }

  void materialize(Storage&, SyncReason) override {
    throw SpeculationAbort("it reads a tensor's data");
  }
  void release(Storage&) noexcept override {}

 private:
  static void check_traceable(const OpDef& def, const OpCall& call) {
    if (def.flags & kIsRandom)
      throw SpeculationAbort(
          "it calls a random op (a traced body's draws would differ from eager mode's)");
    if (any_requires_grad(call.inputs)) throw SpeculationAbort(kNeedsGradients);
  }

  // A result handed back as it is must be a new row-major tensor eagerly too (strides compared
  // exactly: an expand over a size-1 dim is a view), must not share memory with another result,
  // and must not be a view of an argument or a capture (eagerly it would alias them; passing
  // the argument or capture itself through is allowed: docs/control_flow.md).
  void check_direct_result(const std::vector<Tensor>& outputs, size_t i) const {
    const TensorImpl* o = outputs[i].impl();
    const bool passthrough = is_argument(o) || is_capture(o);
    // A passed-through argument is strided too when the caller's tensor is: the node's result
    // would be a new row-major tensor, so its strides would differ from eager mode's.
    if (!has_fresh_layout(*o))
      throw SpeculationAbort(passthrough || !values_.contains(o)
                                 ? "it returns a strided argument or capture itself (a new "
                                   "result would be row-major)"
                                 : "it returns a strided view (a new result would be "
                                   "row-major)");
    for (size_t j = 0; j < i; ++j)
      if (outputs[j].impl()->storage() == o->storage())
        throw SpeculationAbort("it returns results that share memory");
    if (passthrough) return;
    for (const TensorImpl* a : arguments_)
      if (a->storage() == o->storage())
        throw SpeculationAbort("it returns a view of its argument or of a captured tensor");
    for (const Tensor& c : captures_)
      if (c.impl()->storage() == o->storage())
        throw SpeculationAbort("it returns a view of its argument or of a captured tensor");
  }

  bool is_capture(const TensorImpl* t) const {
    for (const Tensor& c : captures_)
      if (c.impl() == t) return true;
    return false;
  }

  bool is_argument(const TensorImpl* t) const {
    for (const TensorImpl* a : arguments_)
      if (a == t) return true;
    return false;
  }

  Tensor new_value(const OutputMeta& meta) {
    const size_t nbytes = static_cast<size_t>(numel_of(meta.sizes)) * itemsize(meta.dtype);
    auto storage = make_ref<Storage>(nbytes, meta.device, this, 0, 0);
    return Tensor(make_ref<TensorImpl>(meta.sizes, meta.dtype, meta.device, std::move(storage)));
  }

  void bind(const Tensor& t, ValueId v) {
    values_[t.impl()] = v;
    keep_.push_back(t);  // keeps the TensorImpl alive, so its address names one tensor
  }

  // Drops nodes whose values reach no output, keeping every input (they are bound by position).
  static Graph prune_dead_nodes(Graph& g) { return canonicalize(g, /*keep_inputs=*/true).graph; }

  ModeHandler* saved_mode_;
  Graph graph_;
  std::unordered_map<const TensorImpl*, ValueId> values_;
  std::vector<Tensor> keep_;
  std::vector<Tensor> captures_;
  std::vector<const TensorImpl*> arguments_;
};

}  // namespace

bool speculating() { return t_speculation_depth > 0; }

HopRecorder* current_body_tracer() { return dynamic_cast<BodyTracer*>(current_mode()); }

TracedBody trace_body(const BodyFn& fn, std::span<const Tensor> args, size_t direct_results) {
  // Tracing draws nothing: a random op aborts it, and the offsets it reserved first must not
  // move the generator (the eager fallback then draws what eager mode draws).
  PhiloxReplayGuard no_draws(philox_state());
  BodyTracer tracer;
  std::vector<Tensor> placeholders;
  placeholders.reserve(args.size());
  for (const Tensor& a : args) placeholders.push_back(tracer.placeholder(a));
  std::vector<Tensor> outputs;
  try {
    outputs = fn(placeholders);
  } catch (const Error& e) {
    // Eager mode raises it only if this body runs: let the fallback decide.
    throw SpeculationAbort(std::string("it raised an error while traced: ") + e.what());
  }
  return tracer.finish(outputs, direct_results);
}

}  // namespace kiln::tracer
