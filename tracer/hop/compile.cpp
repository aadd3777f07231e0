// compile(fn): explicit whole-function capture with guards on the arguments' metadata
// (tracer/hop/compile_cache.h). Eagerly a call checks its args and runs fn.
#include "runtime/config.h"
#include "tracer/hop/compile_cache.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"

namespace kiln {

namespace hop {

TensorList run_compiled_eagerly(const Fn& fn, const TensorList& args) {
  TensorList out = fn(args);
  check_defined_outputs("compile", "the compiled function", out);
  return out;
}

}  // namespace hop

CompiledFn::CompiledFn(Fn fn)
    : fn_(std::make_shared<const Fn>(std::move(fn))),
      cache_(std::make_shared<hop::CompileCache>()) {}

TensorList CompiledFn::operator()(const TensorList& args) const {
  hop::check_defined_inputs("compile", "args", args);
  if (auto traced =
          hop::cached_call("compile", *cache_, *fn_, args, config().jit_recompile_limit, {}))
    return *traced;
  return hop::run_compiled_eagerly(*fn_, args);
}

size_t CompiledFn::traces() const { return cache_->size(); }

CompiledFn compile(Fn fn) {
  hop::check_callable("compile", "fn", static_cast<bool>(fn));
  return CompiledFn(std::move(fn));
}

}  // namespace kiln
