// The eager implementations of the higher-order ops (tracer/hop/hop.h): what KILN_JIT=0 runs,
// and what the tracing path falls back to when it cannot capture a body. Arguments are already
// validated by the public functions (tracer/hop/hop_checks.h); these still check what only
// running the bodies reveals (output counts, dtypes, shapes).
#pragma once
#include "tracer/hop/hop.h"

namespace kiln::hop {

using CondFn = std::function<Tensor(const TensorList&)>;
using ScanFn =
    std::function<std::pair<TensorList, TensorList>(const TensorList& carry, const TensorList& x)>;

TensorList run_cond_eagerly(const Tensor& pred, const Fn& true_fn, const Fn& false_fn,
                            const TensorList& operands);
TensorList run_while_loop_eagerly(const CondFn& cond_fn, const Fn& body_fn,
                                  const TensorList& carried);
std::pair<TensorList, TensorList> run_scan_eagerly(const ScanFn& fn, const TensorList& init,
                                                   const TensorList& xs);
TensorList run_map_eagerly(const Fn& fn, const TensorList& xs);
TensorList run_checkpoint_eagerly(const Fn& fn, const TensorList& args);
TensorList run_region_eagerly(const std::string& name, const Fn& fn, const TensorList& args);
TensorList run_opaque_eagerly(const Fn& fn, const TensorList& args);
TensorList run_compiled_eagerly(const Fn& fn, const TensorList& args);

}  // namespace kiln::hop
