#include "tracer/hop/compile_cache.h"

#include "runtime/autograd/grad_mode.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "tracer/body_tracer.h"
#include "tracer/graph_hash.h"
#include "tracer/hop/hop_checks.h"
#include "tracer/hop/traced.h"
#include "tracer/hop_recorder.h"

namespace kiln::hop {

namespace {

bool same_guards(const std::vector<tracer::ValueMeta>& a, const std::vector<tracer::ValueMeta>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].sizes != b[i].sizes || a[i].strides != b[i].strides || a[i].dtype != b[i].dtype ||
        a[i].device != b[i].device)
      return false;
  }
  return true;
}

}  // namespace

std::vector<tracer::ValueMeta> CompileCache::guards_of(const TensorList& args) {
  std::vector<tracer::ValueMeta> out;
  out.reserve(args.size());
  for (const Tensor& a : args) out.push_back(tracer::meta_of(a.impl()));
  return out;
}

const CompileCache::Entry* CompileCache::find(const std::vector<tracer::ValueMeta>& guards) const {
  std::lock_guard lock(mu_);
  for (const Entry& e : entries_)
    if (same_guards(e.guards, guards)) return &e;
  return nullptr;
}

bool CompileCache::add(Entry entry, int limit) {
  std::lock_guard lock(mu_);
  if (limit > 0 && static_cast<int>(entries_.size()) >= limit) return false;
  entries_.push_back(std::move(entry));
  return true;
}

size_t CompileCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

bool CompileCache::first_limit_warning() {
  std::lock_guard lock(mu_);
  return !std::exchange(warned_, true);
}

namespace {

TensorList record_call(tracer::HopRecorder& recorder, const CompileCache::Entry& e,
                       const TensorList& args) {
  Attrs attrs;
  attrs.ints[0] = static_cast<int64_t>(args.size());
  TensorList inputs = args;
  inputs.insert(inputs.end(), e.captures.begin(), e.captures.end());
  return recorder.record_hop(OpId::Call, attrs, e.body, inputs, e.results);
}

bool needs_gradients(const TensorList& args) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& a : args)
    if (a.impl()->requires_grad()) return true;
  return false;
}

// Traces fn for `guards` (a cache entry that is not traceable when the body cannot be traced).
CompileCache::Entry trace_entry(const std::string& op, const Fn& fn, const TensorList& args,
                                std::vector<tracer::ValueMeta> guards) {
  CompileCache::Entry entry;
  entry.guards = std::move(guards);
  try {
    tracer::TracedBody body = tracer::trace_body(
        [&](const TensorList& a) {
          TensorList out = fn(a);
          check_defined_outputs(op.c_str(), "fn", out);
          return out;
        },
        args);
    entry.traceable = true;
    std::vector<tracer::Graph> bodies;
    bodies.push_back(std::move(body.graph));
    entry.body = tracer::Subgraphs(std::move(bodies));
    entry.captures = std::move(body.captures);
    entry.results = std::move(body.results);
  } catch (const tracer::SpeculationAbort& abort) {
    entry.fallback_reason = abort.what();
    note_fallback(op.c_str(), entry.fallback_reason);
  }
  return entry;
}

// KILN_JIT_VALIDATE: the cached body must be what fn traces now, over the same captured tensors.
void validate(const std::string& op, const CompileCache::Entry& cached, const Fn& fn,
              const TensorList& args) {
  CompileCache::Entry now = trace_entry(op, fn, args, cached.guards);
  if (!now.traceable) return;  // counted as a fallback; the cached body still runs
  bool same = now.captures.size() == cached.captures.size() &&
              tracer::structurally_equal(now.body[0], cached.body[0]);
  for (size_t i = 0; same && i < now.captures.size(); ++i)
    same = now.captures[i].impl() == cached.captures[i].impl();
  KILN_CHECK(same,
             "{}: the function traced another body, or captured other tensors, than when it was "
             "first traced with these argument shapes (KILN_JIT_VALIDATE); pass tensors that "
             "change between calls as arguments",
             op);
}

}  // namespace

std::optional<TensorList> cached_call(const std::string& op, CompileCache& cache, const Fn& fn,
                                      const TensorList& args, int limit,
                                      const std::function<void(const tracer::Graph&)>& on_trace) {
  tracer::HopRecorder* recorder = tracer::hop_recorder();
  if (recorder == nullptr) return std::nullopt;
  if (needs_gradients(args)) {
    note_fallback(op.c_str(), tracer::kNeedsGradients);
    return std::nullopt;
  }
  std::vector<tracer::ValueMeta> guards = CompileCache::guards_of(args);
  if (const CompileCache::Entry* hit = cache.find(guards)) {
    if (!hit->traceable) {
      note_fallback(op.c_str(), hit->fallback_reason);
      return std::nullopt;
    }
    // Traced without gradients (grad mode off), replayed with them: a captured weight that
    // requires grad must get its gradient, so this call runs fn.
    if (needs_gradients(hit->captures)) {
      note_fallback(op.c_str(), tracer::kNeedsGradients);
      return std::nullopt;
    }
    if (config().jit_validate) validate(op, *hit, fn, args);
    return record_call(*recorder, *hit, args);
  }
  if (limit > 0 && static_cast<int>(cache.size()) >= limit) {
    if (cache.first_limit_warning())
      KILN_WARN(Tracer,
                "{}: traced for {} argument signatures (KILN_JIT_RECOMPILE_LIMIT); calls with new "
                "ones run it op by op",
                op, cache.size());
    return std::nullopt;
  }
  CompileCache::Entry entry = trace_entry(op, fn, args, std::move(guards));
  if (entry.traceable && on_trace) on_trace(entry.body[0]);
  cache.add(entry, limit);
  if (!entry.traceable) return std::nullopt;
  return record_call(*recorder, entry, args);
}

}  // namespace kiln::hop
