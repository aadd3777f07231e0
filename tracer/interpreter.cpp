#include "tracer/interpreter.h"

#include <unordered_map>

#include "runtime/error.h"
#include "tracer/hop_interpreter.h"

namespace kiln::tracer {

std::vector<BodyPlans> body_plans_of(const Graph& g) {
  std::vector<BodyPlans> out(g.nodes.size());
  std::unordered_map<const Graph*, BodyPlans> planned;  // by the shared list's first body
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Subgraphs& bodies = g.nodes[j].subgraphs;
    if (bodies.empty()) continue;
    BodyPlans& same = planned[bodies.begin()];
    if (!same) {
      auto plans = std::make_shared<std::vector<InterpreterPlan>>();
      plans->reserve(bodies.size());
      for (const Graph& body : bodies) plans->push_back(plan_interpreter(body));
      same = std::move(plans);
    }
    out[j] = same;
  }
  return out;
}

InterpreterPlan plan_interpreter(const Graph& g) {
  const auto nvalues = static_cast<size_t>(g.num_values());
  constexpr int32_t kNever = -1, kOutput = -2;
  std::vector<int32_t> last_use(nvalues, kNever);
  for (size_t j = 0; j < g.nodes.size(); ++j)
    for (ValueId v : g.nodes[j].inputs) last_use[v] = static_cast<int32_t>(j);
  for (ValueId v : g.outputs) last_use[v] = kOutput;
  InterpreterPlan plan;
  plan.last_use = last_use;
  plan.release_after.resize(g.nodes.size());
  for (size_t v = 0; v < nvalues; ++v) {
    if (last_use[v] >= 0) plan.release_after[last_use[v]].push_back(static_cast<ValueId>(v));
  }
  // A node output nobody reads (only possible before canonicalization) dies at once.
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    ValueId out = g.nodes[j].output;
    if (last_use[out] == kNever) plan.release_after[j].push_back(out);
  }
  plan.moves.assign(g.nodes.size(), 0);
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const auto& ins = g.nodes[j].inputs;
    for (size_t k = 0; k < ins.size() && k < 64; ++k) {
      bool last_here = last_use[ins[k]] == static_cast<int32_t>(j);
      for (size_t m = k + 1; m < ins.size() && last_here; ++m) last_here = ins[m] != ins[k];
      if (last_here) plan.moves[j] |= uint64_t{1} << k;
    }
  }
  plan.bodies = body_plans_of(g);
  plan.donor.assign(g.nodes.size(), -1);
  std::vector<const Node*> producer(nvalues, nullptr);  // null: a graph input
  for (const Node& n : g.nodes) producer[n.output] = &n;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    if (!(op_def(n.op).flags & kWritesAnyLayout) || !n.subgraphs.empty()) continue;
    for (size_t k = 0; k < n.inputs.size() && k < 127; ++k) {
      const ValueId v = n.inputs[k];
      const Node* p = producer[v];
      // Graph inputs are the user's memory; views share a buffer with their base.
      // A tuple_get's result may be a body's input passed through.
      if (p == nullptr || !p->meta.strides.empty() ||
          (op_def(p->op).flags & (kIsView | kHigherOrder)))
        continue;
      if (last_use[v] != static_cast<int32_t>(j) || p->meta.sizes != n.meta.sizes ||
          p->meta.dtype != n.meta.dtype || p->meta.device != n.meta.device)
        continue;
      plan.donor[j] = static_cast<int8_t>(k);
      break;
    }
  }
  return plan;
}

namespace {

// The buffer of a donor value (which dies at this node, so the value table no longer holds it),
// when nothing but the argument list reaches it (one handle per use of `v` by the node).
bool can_take_over(const Tensor& t, const Node& n, ValueId v) {
  int32_t uses = 0;
  for (ValueId u : n.inputs) uses += u == v;
  const TensorImpl* ti = t.impl();
  return ti->use_count() == uses && ti->storage()->use_count() == 1 && !ti->storage()->is_lazy() &&
         ti->autograd() == nullptr;
}

}  // namespace

namespace {

// For each node, the destination it writes its result into (undefined: allocate as usual).
std::vector<Tensor> plan_destinations(const Graph& g, const InterpreterPlan& plan,
                                      std::span<const Tensor> inputs,
                                      std::span<const Tensor> destinations) {
  std::vector<Tensor> at_node;
  if (destinations.empty()) return at_node;
  std::vector<int32_t> producer(static_cast<size_t>(g.num_values()), -1);
  for (size_t j = 0; j < g.nodes.size(); ++j) producer[g.nodes[j].output] = static_cast<int32_t>(j);
  for (size_t k = 0; k < destinations.size() && k < g.outputs.size(); ++k) {
    const Tensor& d = destinations[k];
    if (!d.defined()) continue;
    const ValueId v = g.outputs[k];
    const int32_t j = producer[v];
    if (j < 0) continue;
    const Node& n = g.nodes[j];
    if (!(op_def(n.op).flags & kWritesAnyLayout) || n.meta.dtype != d.impl()->dtype() ||
        n.meta.sizes != d.impl()->sizes())
      continue;
    // The value is this output only (not a second output), and nothing reads the destination's
    // old contents at or after node j, except node j itself through the very same geometry
    // (an elementwise op may write over what it reads at the same index).
    int outputs_of_v = 0;
    for (ValueId o : g.outputs) outputs_of_v += o == v;
    bool safe = outputs_of_v == 1;
    for (size_t i = 0; safe && i < g.inputs.size(); ++i) {
      const TensorImpl* in = inputs[i].impl();
      if (in->storage() != d.impl()->storage()) continue;
      const int32_t last = plan.last_use[g.inputs[i].id];
      if (last == -2)
        safe = false;  // the old contents are an output themselves
      else if (last > j)
        safe = false;
      else if (last == j && !same_geometry(in, d.impl()))
        safe = false;
    }
    if (!safe) continue;
    if (at_node.empty()) at_node.resize(g.nodes.size());
    at_node[j] = d;
  }
  return at_node;
}

}  // namespace

InterpretResult interpret(const Graph& g, const InterpreterPlan& plan,
                          std::span<const Tensor> inputs, std::span<const Tensor> destinations) {
  KILN_CHECK(inputs.size() == g.inputs.size(), "interpret: the graph has {} inputs, got {}",
             g.inputs.size(), inputs.size());
  InterpretResult result;
  std::vector<Tensor> values(static_cast<size_t>(g.num_values()));
  for (size_t i = 0; i < inputs.size(); ++i) values[g.inputs[i].id] = inputs[i];
  std::vector<uint8_t> poisoned;            // sized on the first failure
  std::vector<std::vector<Tensor>> tuples;  // results of higher-order nodes, by value id
  const std::vector<Tensor> write_into = plan_destinations(g, plan, inputs, destinations);
  std::vector<Tensor> args;
  args.reserve(8);
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const Node& n = g.nodes[j];
    bool skip = false;
    if (!poisoned.empty()) {
      for (ValueId v : n.inputs) skip = skip || poisoned[v];
    }
    if (skip) {
      poisoned[n.output] = 1;
    } else {
      try {
        args.clear();
        const uint64_t moves = plan.moves[j];
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          Tensor& v = values[n.inputs[k]];
          if (k < 64 && ((moves >> k) & 1)) {
            args.push_back(std::move(v));
          } else {
            args.push_back(v);
          }
        }
        const OpCall call{n.op, args, n.attrs};
        const OpDef& def = op_def(n.op);
        const int8_t donor = plan.donor[j];
        if (def.flags & kHigherOrder) {
          if (tuples.empty()) tuples.resize(values.size());
          if (n.op == OpId::TupleGet)
            values[n.output] = tuples[n.inputs[0]].at(static_cast<size_t>(n.attrs.ints[0]));
          else
            tuples[n.output] = run_hop_node(n, body_plans(plan.bodies, j), args);
        } else if (def.flags & kIsView) {
          OutputMeta m;  // from the actual input: a body may see it at another offset
          def.meta(call, m);
          values[n.output] = run_eager(def, call, m);
        } else if (!write_into.empty() && write_into[j].defined()) {
          // (the recorder bumped the version when it recorded the write)
          if (write_into[j].impl()->numel() > 0) def.eager(call, write_into[j]);
          values[n.output] = write_into[j];
        } else if (donor >= 0 && can_take_over(args[donor], n, n.inputs[donor])) {
          if (args[donor].impl()->numel() > 0) def.eager(call, args[donor]);
          values[n.output] = std::move(args[donor]);
        } else {
          values[n.output] = run_eager(def, call, n.meta);
        }
      } catch (...) {
        if (!result.error) result.error = std::current_exception();
        if (poisoned.empty()) poisoned.assign(values.size(), 0);
        poisoned[n.output] = 1;
      }
    }
    for (ValueId v : plan.release_after[j]) {
      values[v] = Tensor();
      if (!tuples.empty()) tuples[v].clear();
    }
  }
  result.outputs.reserve(g.outputs.size());
  for (ValueId v : g.outputs) result.outputs.push_back(values[v]);
  return result;
}

}  // namespace kiln::tracer
