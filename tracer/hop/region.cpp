// region(name, fn): a named repeated subgraph. Eagerly a call runs fn; every call notes its input
// metadata in the region registry, which the tracer keys its traced bodies on.
#include "runtime/error.h"
#include "runtime/profiler.h"
#include "tracer/graph_hash.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/region_registry.h"
#include "tracer/hop/traced.h"

namespace kiln {

namespace hop {

TensorList run_region_eagerly(const std::string& name, const Fn& fn, const TensorList& args) {
  TensorList out = fn(args);
  check_defined_outputs(("region '" + name + "'").c_str(), "fn", out);
  return out;
}

}  // namespace hop

Region::Region(std::string name, Fn fn)
    : name_(std::make_shared<const std::string>(std::move(name))),
      fn_(std::make_shared<const Fn>(std::move(fn))) {}

TensorList Region::operator()(const TensorList& args) const {
  // The op name with the region's name is built only on the error path (this runs per call).
  for (const Tensor& a : args)
    if (!a.defined()) hop::check_defined_inputs(("region '" + *name_ + "'").c_str(), "args", args);
  hop::note_region_call(*name_, hop::region_signature(args));
  auto count_body = [&](const tracer::Graph& body) {
    if (hop::note_region_body(*name_, tracer::graph_hash(body)))
      profiler::record_region_trace(*name_);
  };
  if (auto traced = hop::traced_call("region", *fn_, args, count_body)) return *traced;
  return hop::run_region_eagerly(*name_, *fn_, args);
}

Region region(std::string name, Fn fn) {
  KILN_CHECK(!name.empty(),
             "region: the name is empty; give the region a name (it keys the "
             "traced body)");
  hop::check_callable("region", "fn", static_cast<bool>(fn));
  return Region(std::move(name), std::move(fn));
}

}  // namespace kiln
