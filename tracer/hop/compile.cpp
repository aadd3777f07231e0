// compile(fn): explicit whole-function capture with guards on the arguments' metadata
// (tracer/hop/compile_cache.h). Eagerly a call checks its args and runs fn.
#include "runtime/autograd/grad_mode.h"
#include "runtime/config.h"
#include "runtime/logging.h"
#include "tracer/body_tracer.h"
#include "tracer/hop/compile_cache.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/traced.h"
#include "tracer/hop_recorder.h"

namespace kiln {

namespace hop {

TensorList run_compiled_eagerly(const Fn& fn, const TensorList& args) {
  TensorList out = fn(args);
  check_defined_outputs("compile", "the compiled function", out);
  return out;
}

namespace {

TensorList record_call(tracer::HopRecorder& recorder, const CompileCache::Entry& e,
                       const TensorList& args) {
  Attrs attrs;
  attrs.ints[0] = static_cast<int64_t>(args.size());
  TensorList inputs = args;
  inputs.insert(inputs.end(), e.captures.begin(), e.captures.end());
  std::vector<tracer::Graph> bodies{e.body};
  return recorder.record_hop(OpId::Call, attrs, std::move(bodies), inputs, e.results);
}

bool needs_gradients(const TensorList& args) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& a : args)
    if (a.impl()->requires_grad()) return true;
  return false;
}

// The recorded call: the cached trace for these guards, a new trace, or nullopt (run fn).
std::optional<TensorList> compiled_call(CompileCache& cache, const Fn& fn, const TensorList& args) {
  tracer::HopRecorder* recorder = tracer::hop_recorder();
  if (recorder == nullptr) return std::nullopt;
  if (needs_gradients(args)) {
    note_fallback("compile", tracer::kNeedsGradients);
    return std::nullopt;
  }
  std::vector<tracer::ValueMeta> guards = CompileCache::guards_of(args);
  if (std::optional<CompileCache::Entry> hit = cache.find(guards)) {
    if (!hit->traceable) return std::nullopt;
    return record_call(*recorder, *hit, args);
  }
  const int limit = config().jit_recompile_limit;
  if (limit > 0 && static_cast<int>(cache.size()) >= limit) {
    if (cache.first_limit_warning())
      KILN_WARN(Tracer,
                "compile: the function was traced for {} argument signatures "
                "(KILN_JIT_RECOMPILE_LIMIT); calls with new ones run it op by op",
                cache.size());
    return std::nullopt;
  }
  CompileCache::Entry entry;
  entry.guards = std::move(guards);
  try {
    tracer::TracedBody body = tracer::trace_body(
        [&](const TensorList& a) {
          TensorList out = fn(a);
          check_defined_outputs("compile", "the compiled function", out);
          return out;
        },
        args);
    entry.traceable = true;
    entry.body = std::move(body.graph);
    entry.captures = std::move(body.captures);
    entry.results = std::move(body.results);
  } catch (const tracer::SpeculationAbort& abort) {
    note_fallback("compile", abort.what());
  }
  cache.add(entry, limit);
  if (!entry.traceable) return std::nullopt;
  return record_call(*recorder, entry, args);
}

}  // namespace

}  // namespace hop

CompiledFn::CompiledFn(Fn fn)
    : fn_(std::make_shared<const Fn>(std::move(fn))),
      cache_(std::make_shared<hop::CompileCache>()) {}

TensorList CompiledFn::operator()(const TensorList& args) const {
  hop::check_defined_inputs("compile", "args", args);
  if (auto traced = hop::compiled_call(*cache_, *fn_, args)) return *traced;
  return hop::run_compiled_eagerly(*fn_, args);
}

size_t CompiledFn::traces() const { return cache_->size(); }

CompiledFn compile(Fn fn) {
  hop::check_callable("compile", "fn", static_cast<bool>(fn));
  return CompiledFn(std::move(fn));
}

}  // namespace kiln
