// compile(fn): explicit whole-function capture. Guards on input metadata and retracing come with
// the tracer; eagerly a call checks its args and runs fn.
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

CompiledFn::CompiledFn(Fn fn) : fn_(std::make_shared<const Fn>(std::move(fn))) {}

TensorList CompiledFn::operator()(const TensorList& args) const {
  hop::check_defined_inputs("compile", "args", args);
  return hop::run_compiled_eagerly(*fn_, args);
}

CompiledFn compile(Fn fn) {
  hop::check_callable("compile", "fn", static_cast<bool>(fn));
  return CompiledFn(std::move(fn));
}

}  // namespace kiln
