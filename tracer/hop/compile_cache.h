// The traced bodies of one compiled function (kiln::compile), keyed by their guards: the
// metadata of the arguments (dtype, sizes, strides, device of each). Thread-safe.
#pragma once
#include <mutex>
#include <optional>
#include <vector>

#include "tracer/graph.h"
#include "tracer/hop/hop.h"

namespace kiln::hop {

class CompileCache {
 public:
  struct Entry {
    std::vector<tracer::ValueMeta> guards;
    bool traceable = false;  // false: calls with these guards run fn op by op
    tracer::Graph body;      // inputs: the arguments, then the captures
    TensorList captures;     // what fn captured, read at each call
    std::vector<tracer::ValueMeta> results;
  };

  static std::vector<tracer::ValueMeta> guards_of(const TensorList& args);

  // The entry for `guards`, if one was traced.
  std::optional<Entry> find(const std::vector<tracer::ValueMeta>& guards) const;
  // Adds an entry; false (and nothing added) when the function already has `limit` entries.
  bool add(Entry entry, int limit);
  size_t size() const;
  // True the first time it is asked (the one warning when the limit is reached).
  bool first_limit_warning();

 private:
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  bool warned_ = false;
};

}  // namespace kiln::hop
