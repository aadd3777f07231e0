#include "tracer/hop/traced.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "runtime/autograd/grad_mode.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/profiler.h"
#include "tracer/body_tracer.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/stacking.h"
#include "tracer/hop_recorder.h"

namespace kiln::hop {

namespace {

using tracer::HopRecorder;
using tracer::SpeculationAbort;
using tracer::TracedBody;
using tracer::ValueMeta;

std::mutex g_fallback_mu;
std::map<std::string, size_t> g_fallbacks;

const char* const kStridedCarry =
    "it carries a strided tensor (zero iterations would return it as it is; the loop's results "
    "are row-major)";

HopMeta meta_of(const ValueMeta& m) { return HopMeta{m.sizes, m.dtype}; }

// The sizes of `steps` slices of shape `slice` stacked along a new dim 0.
DimVector stacked_sizes(int64_t steps, const DimVector& slice) {
  DimVector out{steps};
  for (int64_t d : slice) out.push_back(d);
  return out;
}

TensorList concat(TensorList a, const TensorList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Gradients through traced bodies are not built yet: an op whose inputs need them runs eagerly
// (a capture that needs them is found while tracing).
void check_no_gradients(const TensorList& inputs) {
  if (!GradMode::is_enabled()) return;
  for (const Tensor& t : inputs)
    if (t.impl()->requires_grad()) throw SpeculationAbort(tracer::kNeedsGradients);
}

// Runs `trace` when recording is on; a SpeculationAbort becomes a fallback (nullopt).
template <class Result, class F>
std::optional<Result> attempt(const char* op, F&& trace) {
  HopRecorder* recorder = tracer::hop_recorder();
  if (recorder == nullptr) return std::nullopt;
  try {
    return trace(*recorder);
  } catch (const SpeculationAbort& abort) {
    note_fallback(op, abort.what());
    return std::nullopt;
  }
}

}  // namespace

void note_fallback(const char* op, const std::string& reason) {
  const std::string key = fmt::format("{}: {}", op, reason);
  bool first = false;
  {
    std::lock_guard lock(g_fallback_mu);
    first = g_fallbacks[key]++ == 0;
  }
  if (first)
    KILN_WARN(Tracer,
              "{}: its body could not be traced ({}); it runs eagerly, recorded op by op "
              "(results are the same; logged once)",
              op, reason);
  profiler::record_fallback(op, reason);
}

size_t fallback_count(const std::string& op_and_reason) {
  std::lock_guard lock(g_fallback_mu);
  auto it = g_fallbacks.find(op_and_reason);
  return it == g_fallbacks.end() ? 0 : it->second;
}

std::optional<TensorList> traced_cond(const Tensor& pred, const Fn& true_fn, const Fn& false_fn,
                                      const TensorList& operands) {
  return attempt<TensorList>("cond", [&](HopRecorder& recorder) {
    KILN_CHECK(pred.impl()->numel() == 1,
               "cond: pred must have exactly one element, got a tensor of shape {} {}",
               shape_str(pred.impl()->sizes()), pred.impl()->dtype());
    check_no_gradients(operands);
    TracedBody yes = tracer::trace_body(true_fn, operands);
    TracedBody no = tracer::trace_body(false_fn, operands);
    check_output_count("cond", "false_fn", no.results.size(), "true_fn", yes.results.size());
    for (size_t i = 0; i < yes.results.size(); ++i)
      check_same_outputs("cond", "false_fn", i, "true_fn's", meta_of(yes.results[i]),
                         meta_of(no.results[i]));
    Attrs attrs;
    attrs.ints = {static_cast<int64_t>(operands.size()), static_cast<int64_t>(yes.captures.size()),
                  static_cast<int64_t>(no.captures.size()), 0};
    TensorList inputs = concat(concat(TensorList{pred}, operands), yes.captures);
    inputs = concat(std::move(inputs), no.captures);
    std::vector<tracer::Graph> bodies;
    bodies.push_back(std::move(yes.graph));
    bodies.push_back(std::move(no.graph));
    return recorder.record_hop(OpId::Cond, attrs, std::move(bodies), inputs, yes.results);
  });
}

std::optional<TensorList> traced_while_loop(const CondFn& cond_fn, const Fn& body_fn,
                                            const TensorList& carried) {
  return attempt<TensorList>("while_loop", [&](HopRecorder& recorder) {
    check_no_gradients(carried);
    // A loop that runs zero times returns `carried` as it is; the node's results are row-major.
    for (const Tensor& c : carried)
      if (!has_fresh_layout(*c.impl())) throw SpeculationAbort(kStridedCarry);
    TracedBody test = tracer::trace_body(
        [&](const TensorList& state) {
          Tensor p = cond_fn(state);
          KILN_CHECK(p.defined(), "while_loop: the result of cond_fn is an undefined tensor");
          KILN_CHECK(p.impl()->numel() == 1,
                     "while_loop: the result of cond_fn must have exactly one element, got a "
                     "tensor of shape {} {}",
                     shape_str(p.impl()->sizes()), p.impl()->dtype());
          return TensorList{p};
        },
        carried);
    TracedBody body = tracer::trace_body(
        [&](const TensorList& state) {
          TensorList next = body_fn(state);
          check_outputs_match("while_loop", "body_fn", next, "carried", carried);
          return next;
        },
        carried);
    Attrs attrs;
    attrs.ints = {static_cast<int64_t>(carried.size()), static_cast<int64_t>(test.captures.size()),
                  static_cast<int64_t>(body.captures.size()), 0};
    TensorList inputs = concat(concat(carried, test.captures), body.captures);
    std::vector<tracer::Graph> bodies;
    bodies.push_back(std::move(test.graph));
    bodies.push_back(std::move(body.graph));
    return recorder.record_hop(OpId::WhileLoop, attrs, std::move(bodies), inputs, body.results);
  });
}

std::optional<std::pair<TensorList, TensorList>> traced_scan(const ScanFn& fn,
                                                             const TensorList& init,
                                                             const TensorList& xs) {
  using Result = std::pair<TensorList, TensorList>;
  return attempt<Result>("scan", [&](HopRecorder& recorder) -> Result {
    check_no_gradients(concat(init, xs));
    const int64_t steps = leading_length("scan", xs);
    const size_t n_init = init.size();
    TracedBody body = tracer::trace_body(
        [&](const TensorList& in) {
          TensorList carry(in.begin(), in.begin() + static_cast<ptrdiff_t>(n_init));
          TensorList x(in.begin() + static_cast<ptrdiff_t>(n_init), in.end());
          auto [next, ys] = fn(carry, x);
          check_outputs_match("scan", "fn's new carry", next, "init", init);
          check_defined_outputs("scan", "fn's ys at step 0", ys);
          return concat(std::move(next), ys);
        },
        concat(init, slices_at(xs, 0)), /*direct_results=*/n_init);
    const size_t n_ys = body.results.size() - n_init;
    std::vector<ValueMeta> results(body.results.begin(),
                                   body.results.begin() + static_cast<ptrdiff_t>(n_init));
    for (size_t i = n_init; i < body.results.size(); ++i) {
      ValueMeta m = body.results[i];
      m.sizes = stacked_sizes(steps, m.sizes);
      m.strides = {};
      results.push_back(std::move(m));
    }
    Attrs attrs;
    attrs.ints = {static_cast<int64_t>(n_init), static_cast<int64_t>(xs.size()),
                  static_cast<int64_t>(body.captures.size()), static_cast<int64_t>(n_ys)};
    const TensorList inputs = concat(concat(init, xs), body.captures);
    std::vector<tracer::Graph> bodies;
    bodies.push_back(std::move(body.graph));
    TensorList out = recorder.record_hop(OpId::Scan, attrs, std::move(bodies), inputs, results);
    TensorList ys(out.begin() + static_cast<ptrdiff_t>(n_init), out.end());
    out.resize(n_init);
    return {std::move(out), std::move(ys)};
  });
}

std::optional<TensorList> traced_map(const Fn& fn, const TensorList& xs) {
  return attempt<TensorList>("map", [&](HopRecorder& recorder) {
    check_no_gradients(xs);
    const int64_t steps = leading_length("map", xs);
    TracedBody body = tracer::trace_body(
        [&](const TensorList& x) {
          TensorList out = fn(x);
          check_defined_outputs("map", "fn at step 0", out);
          return out;
        },
        slices_at(xs, 0), /*direct_results=*/0);
    std::vector<ValueMeta> results;
    for (ValueMeta m : body.results) {
      m.sizes = stacked_sizes(steps, m.sizes);
      m.strides = {};
      results.push_back(std::move(m));
    }
    Attrs attrs;
    attrs.ints = {static_cast<int64_t>(xs.size()), static_cast<int64_t>(body.captures.size()), 0,
                  0};
    std::vector<tracer::Graph> bodies;
    bodies.push_back(std::move(body.graph));
    return recorder.record_hop(OpId::Map, attrs, std::move(bodies), concat(xs, body.captures),
                               results);
  });
}

std::optional<TensorList> traced_call(const char* op, const Fn& fn, const TensorList& args,
                                      const std::function<void(const tracer::Graph&)>& on_body) {
  return attempt<TensorList>(op, [&](HopRecorder& recorder) {
    check_no_gradients(args);
    TracedBody body = tracer::trace_body(
        [&](const TensorList& a) {
          TensorList out = fn(a);
          check_defined_outputs(op, "fn", out);
          return out;
        },
        args);
    if (on_body) on_body(body.graph);
    Attrs attrs;
    attrs.ints[0] = static_cast<int64_t>(args.size());
    std::vector<tracer::Graph> bodies;
    bodies.push_back(std::move(body.graph));
    return recorder.record_hop(OpId::Call, attrs, std::move(bodies), concat(args, body.captures),
                               body.results);
  });
}

}  // namespace kiln::hop
