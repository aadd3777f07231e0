#include "tracer/interpreter.h"

#include "runtime/error.h"

namespace kiln::tracer {

InterpreterPlan plan_interpreter(const Graph& g) {
  const auto nvalues = static_cast<size_t>(g.num_values());
  constexpr int32_t kNever = -1, kOutput = -2;
  std::vector<int32_t> last_use(nvalues, kNever);
  for (size_t j = 0; j < g.nodes.size(); ++j)
    for (ValueId v : g.nodes[j].inputs) last_use[v] = static_cast<int32_t>(j);
  for (ValueId v : g.outputs) last_use[v] = kOutput;
  InterpreterPlan plan;
  plan.release_after.resize(g.nodes.size());
  for (size_t v = 0; v < nvalues; ++v) {
    if (last_use[v] >= 0) plan.release_after[last_use[v]].push_back(static_cast<ValueId>(v));
  }
  // A node output nobody reads (only possible before canonicalization) dies at once.
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    ValueId out = g.nodes[j].output;
    if (last_use[out] == kNever) plan.release_after[j].push_back(out);
  }
  return plan;
}

InterpretResult interpret(const Graph& g, const InterpreterPlan& plan,
                          std::span<const Tensor> inputs) {
  KILN_CHECK(inputs.size() == g.inputs.size(), "interpret: the graph has {} inputs, got {}",
             g.inputs.size(), inputs.size());
  InterpretResult result;
  std::vector<Tensor> values(static_cast<size_t>(g.num_values()));
  for (size_t i = 0; i < inputs.size(); ++i) values[g.inputs[i].id] = inputs[i];
  std::vector<uint8_t> poisoned;  // sized on the first failure
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
        KILN_CHECK(n.subgraphs.empty(),
                   "interpret: {} has subgraphs, which the interpreter cannot run",
                   op_display_name(n.op));
        args.clear();
        for (ValueId v : n.inputs) args.push_back(values[v]);
        const OpCall call{n.op, args, n.attrs};
        values[n.output] = run_eager(op_def(n.op), call, n.meta);
      } catch (...) {
        if (!result.error) result.error = std::current_exception();
        if (poisoned.empty()) poisoned.assign(values.size(), 0);
        poisoned[n.output] = 1;
      }
    }
    for (ValueId v : plan.release_after[j]) values[v] = Tensor();
  }
  result.outputs.reserve(g.outputs.size());
  for (ValueId v : g.outputs) result.outputs.push_back(values[v]);
  return result;
}

}  // namespace kiln::tracer
