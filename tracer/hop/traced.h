// The recorded forms of the higher-order ops (DESIGN.md, "Tracer"): when recording is on, each
// op traces its bodies into subgraphs (tracer/body_tracer.h) and records one higher-order node
// (tracer/hop_nodes.h) whose results are lazy, so a cond or a loop neither syncs nor breaks the
// segment. Each function returns nullopt when the op should run eagerly instead: recording is
// off, or a body could not be captured (the fallback, logged once per reason and counted in
// KILN_STATS). The eager form then runs its callables, recorded op by op: results never change.
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "tracer/graph.h"
#include "tracer/hop/eager.h"

namespace kiln::hop {

std::optional<TensorList> traced_cond(const Tensor& pred, const Fn& true_fn, const Fn& false_fn,
                                      const TensorList& operands);
std::optional<TensorList> traced_while_loop(const CondFn& cond_fn, const Fn& body_fn,
                                            const TensorList& carried);
std::optional<std::pair<TensorList, TensorList>> traced_scan(const ScanFn& fn,
                                                             const TensorList& init,
                                                             const TensorList& xs);
std::optional<TensorList> traced_map(const Fn& fn, const TensorList& xs);
// One call node over fn's body (region, checkpoint without gradients). `op` names the op in
// messages; `on_body` (optional) sees the traced body before it is recorded.
std::optional<TensorList> traced_call(
    const char* op, const Fn& fn, const TensorList& args,
    const std::function<void(const tracer::Graph&)>& on_body = {});

// Logs (once per op and reason) and counts a fallback.
void note_fallback(const char* op, const std::string& reason);
// Fallbacks so far, per "op: reason" (tests, stats).
size_t fallback_count(const std::string& op_and_reason);

}  // namespace kiln::hop
