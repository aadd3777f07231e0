// The traced bodies of one compiled function (kiln::compile) or one named region
// (kiln::region), keyed by their guards: the metadata of the arguments (dtype, sizes, strides,
// device of each). A call whose guards match records the cached body again without running the
// function; the tensors the function captured are bound when it was traced. Thread-safe.
#pragma once
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tracer/graph.h"
#include "tracer/hop/hop.h"

namespace kiln::hop {

class CompileCache;

// Records a call of `fn` through `cache` when recording is on: the cached body for these guards,
// else a new trace (up to `limit` per cache, then one warning). nullopt: run fn eagerly instead
// (recording off, past the limit, a body that cannot be traced, arguments needing gradients).
// `op` names the op in messages ("compile", "region 'decoder'"); `on_trace` sees each new body.
// With KILN_JIT_VALIDATE=1 a cached call traces fn again and raises a kiln::Error if it captured
// other tensors or traced another body than the cached one.
std::optional<TensorList> cached_call(const std::string& op, CompileCache& cache, const Fn& fn,
                                      const TensorList& args, int limit,
                                      const std::function<void(const tracer::Graph&)>& on_trace);

class CompileCache {
 public:
  struct Entry {
    std::vector<tracer::ValueMeta> guards;
    bool traceable = false;       // false: calls with these guards run fn op by op
    std::string fallback_reason;  // why not (counted again at each such call)
    // The body (one; its inputs: the arguments, then the captures), shared by every call node
    // recorded from this entry (tracer::Subgraphs): a region called N times records one body.
    tracer::Subgraphs body;
    TensorList captures;  // what fn captured, read at each call
    std::vector<tracer::ValueMeta> results;
  };

  static std::vector<tracer::ValueMeta> guards_of(const TensorList& args);

  // The entry for `guards`, if one was traced (null if not). Entries are never removed or
  // changed once added, and stay where they are: the pointer lives as long as the cache (a call
  // reads its body without copying it: a copy per call was a measurable part of a region
  // call's recording cost).
  const Entry* find(const std::vector<tracer::ValueMeta>& guards) const;
  // Adds an entry; false (and nothing added) when the function already has `limit` entries.
  bool add(Entry entry, int limit);
  size_t size() const;
  // True the first time it is asked (the one warning when the limit is reached).
  bool first_limit_warning();

 private:
  mutable std::mutex mu_;
  std::deque<Entry> entries_;  // a deque: adding never moves an entry (find's pointers)
  bool warned_ = false;
};

}  // namespace kiln::hop
