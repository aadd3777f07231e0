// The region registry: for each region name, the distinct input metadata signatures (dtype and
// sizes of each argument, in order) its calls have seen. The tracing side looks traced bodies up
// by (name, signature); the count of distinct signatures per name is what stats and tests read.
// Thread-safe.
#pragma once
#include <cstddef>
#include <string>
#include <typeinfo>
#include <vector>

#include "tracer/hop/hop_checks.h"

namespace kiln::hop {

using RegionSignature = std::vector<HopMeta>;

RegionSignature region_signature(const TensorList& args);

// Records a call of region `name` with `sig`; returns true when the signature is new for it.
bool note_region_call(const std::string& name, const RegionSignature& sig);

// Distinct signatures seen for `name` (0 for a name never called).
size_t region_signature_count(const std::string& name);
// Calls recorded for `name`.
size_t region_call_count(const std::string& name);

// Records that a call of `name` traced a body with structural hash `body`; true when that body
// is new for the name (KILN_STATS counts those: "region traced").
bool note_region_body(const std::string& name, uint64_t body);
// Distinct traced bodies of `name`.
size_t region_body_count(const std::string& name);

class CompileCache;
// The traced bodies of region `name` whose fn is of type `fn_type` (one closure type: the same
// lambda expression, wherever the Region object was made), shared by every call.
CompileCache& region_trace_cache(const std::string& name, const std::type_info& fn_type);

// Forgets every region (tests).
void reset_region_registry();

}  // namespace kiln::hop
