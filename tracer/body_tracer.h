// Speculative tracing of a higher-order op's body (DESIGN.md, "Tracer"): the body's callable runs
// once on placeholder tensors (lazy, with the metadata of the real arguments) while a BodyTracer
// is the thread's mode, so every op it calls becomes a node of the body's graph. Tensors the body
// uses that are neither its arguments nor made inside it (a weight a lambda captured) are lifted
// to extra graph inputs: the captures, which the op passes in after its own inputs.
//
// A body that cannot be captured aborts the trace with SpeculationAbort, and the op falls back to
// running its callables eagerly (recorded inline as usual), so results never change:
// - it reads data (item, to_vector, data_ptr, printing, kiln::sync, a placeholder's storage);
// - it calls opaque, or uses a random op (the draws of a body run many times, or of a cond branch
//   not taken, would not be eager's);
// - it writes into a tensor from outside the body, into its own argument, or through a view;
// - it needs gradients (its eager form then records eager mode's backward: bitwise gradients);
// - it raises an error (eager mode may not, if that branch is never taken);
// - it returns a strided view, or results that share memory (new results would not keep that).
// A body may return its argument or a capture (a loop carrying the previous value): the op's
// result is then a new tensor with that value, where eagerly it would be the same tensor.
#pragma once
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::tracer {

// Why a body could not be traced (the fallback reason logged and counted).
class SpeculationAbort : public std::exception {
 public:
  explicit SpeculationAbort(std::string reason) : reason_(std::move(reason)) {}
  const char* what() const noexcept override { return reason_.c_str(); }

 private:
  std::string reason_;
};

// The fallback reason of an op whose inputs or captures need gradients.
inline constexpr const char* kNeedsGradients =
    "it needs gradients (its eager form records eager mode's backward, bit for bit)";

using BodyFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct TracedBody {
  Graph graph;                     // inputs: one per argument, then one per capture
  std::vector<Tensor> captures;    // the outer tensors bound to the capture inputs
  std::vector<ValueMeta> results;  // metadata of each output, in order
};

// Traces `fn` on placeholders with the geometry of `args`. Throws SpeculationAbort (fall back)
// or whatever `fn` throws that is not a kiln::Error. The first `direct_results` outputs become
// the op's results as they are (checked for layout and aliasing); the rest are stacked over
// steps (scan's ys, map's outputs).
inline constexpr size_t kAllDirect = ~size_t{0};
TracedBody trace_body(const BodyFn& fn, std::span<const Tensor> args,
                      size_t direct_results = kAllDirect);

// True while this thread traces a body: sync points and reads of lazy data abort the trace.
bool speculating();

class HopRecorder;
// The body this thread is tracing (the innermost), or null.
HopRecorder* current_body_tracer();

}  // namespace kiln::tracer
