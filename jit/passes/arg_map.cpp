#include "jit/passes/arg_map.h"

#include "ops/random.h"
#include "runtime/error.h"
#include "tracer/interpreter.h"

namespace kiln::jit::passes {

tracer::RunArgs ArgMap::map(const tracer::RunArgs& args, Storage& s) const {
  KILN_CHECK(args.inputs.size() == original.inputs.size() &&
                 args.scalars.size() == original_runtime.size(),
             "jit plan: run arguments of {} inputs and {} scalars; the region has {} and {}",
             args.inputs.size(), args.scalars.size(), original.inputs.size(),
             original_runtime.size());
  s.inputs.assign(args.inputs.begin(), args.inputs.end());
  s.inputs.insert(s.inputs.end(), constants.begin(), constants.end());
  s.scalars.clear();
  for (int32_t r : scalars) s.scalars.push_back(args.scalars[static_cast<size_t>(r)]);
  s.random.clear();
  for (int32_t r : random) s.random.push_back(args.random[static_cast<size_t>(r)]);
  return tracer::RunArgs{s.inputs, args.destinations, s.scalars, s.random};
}

tracer::InterpretResult ArgMap::run_original(const tracer::RunArgs& args) const {
  tracer::Graph g = original;
  for (size_t r = 0; r < original_runtime.size(); ++r) {
    const tracer::ScalarPosition& p = original_runtime[r];
    g.nodes[static_cast<size_t>(p.node)].attrs.scalars[static_cast<size_t>(p.index)] =
        args.scalars[r];
  }
  const std::vector<int32_t> rn = tracer::random_nodes(g);
  for (size_t k = 0; k < rn.size() && k < args.random.size(); ++k)
    set_philox(g.nodes[static_cast<size_t>(rn[k])].attrs, args.random[k].seed,
               args.random[k].counter);
  return tracer::interpret(g, tracer::plan_interpreter(g), args.inputs);
}

}  // namespace kiln::jit::passes
