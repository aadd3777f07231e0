// region(name, fn): a named repeated subgraph. Eagerly a call runs fn. Recording, the body is
// traced once per (name, closure type, argument signature) and every later call records that
// body again without running fn (tracer/hop/compile_cache.h); every call notes its input
// metadata in the region registry.
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/profiler.h"
#include "tracer/graph_hash.h"
#include "tracer/hop/compile_cache.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/region_registry.h"
#include "tracer/hop/traced.h"
#include "tracer/hop_recorder.h"

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
  // Recording: traced once per argument signature, then replayed (tracer/hop/compile_cache.h).
  if (tracer::hop_recorder() != nullptr) {
    hop::CompileCache& cache = hop::region_trace_cache(*name_, fn_->target_type());
    if (auto traced =
            hop::cached_call("region", cache, *fn_, args, config().jit_recompile_limit, count_body))
      return *traced;
  }
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
