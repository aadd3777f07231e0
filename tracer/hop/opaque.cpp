// opaque(fn, args): a host callback. Recorded work is flushed first, so fn sees materialized
// tensors, and fn's own ops run eagerly (never recorded): it may read data freely.
#include "ops/functions.h"
#include "runtime/dispatcher.h"
#include "runtime/lazy.h"
#include "tracer/body_tracer.h"
#include "tracer/hop/eager.h"
#include "tracer/hop/hop_checks.h"

namespace kiln {

namespace hop {

TensorList run_opaque_eagerly(const Fn& fn, const TensorList& args) {
  // Inside a body being traced there is nothing to run it on: the enclosing op falls back.
  if (tracer::speculating()) throw tracer::SpeculationAbort("it calls opaque (a host callback)");
  sync_thread(SyncReason::HigherOrderOp);
  EagerModeGuard eager;
  TensorList out = fn(args);
  check_defined_outputs("opaque", "fn", out);
  // fn may hand back a tensor recorded elsewhere (a capture produced by another thread).
  for (const Tensor& t : out) sync_point(t, SyncReason::HigherOrderOp);
  return out;
}

}  // namespace hop

TensorList opaque(Fn fn, const TensorList& args) {
  hop::check_callable("opaque", "fn", static_cast<bool>(fn));
  hop::check_defined_inputs("opaque", "args", args);
  return hop::run_opaque_eagerly(fn, args);
}

}  // namespace kiln
