// Argument and metadata checks shared by the higher-order ops, eager and traced. Every failure is
// a kiln::Error that names the op, what was wrong (which callable, which output) and, for
// metadata, both shapes and dtypes, e.g.
//   "cond: output 1 of false_fn has shape [3, 4] Float32 but true_fn's has shape [3] Float32".
#pragma once
#include <cstddef>
#include <string>

#include "runtime/small_vector.h"
#include "tracer/hop/hop.h"

namespace kiln::hop {

// What must agree between a loop's carried values across iterations, or between the
// outputs of two branches: dtype and sizes.
struct HopMeta {
  DimVector sizes;
  DType dtype = DType::Float32;
  bool operator==(const HopMeta&) const = default;
};
HopMeta hop_meta(const Tensor& t);
std::string describe_meta(const HopMeta& m);  // "[3, 4] Float32"

// `what` (e.g. "true_fn") must be callable (a non-empty std::function).
void check_callable(const char* op, const char* what, bool callable);

// Every tensor of `list` (named `what`, e.g. "operands") must be defined.
void check_defined_inputs(const char* op, const char* what, const TensorList& list);

// Every output of `what` (e.g. "body_fn") must be defined.
void check_defined_outputs(const char* op, const char* what, const TensorList& outputs);

// `what` returned `got` tensors where `reference` (e.g. "carried", "init") has `expected`.
void check_output_count(const char* op, const char* what, size_t got, const char* reference,
                        size_t expected);

// Output `index` of `what` must have the metadata `reference` has (reference reads as a
// possessive: "true_fn's", "the carried value's").
void check_same_outputs(const char* op, const char* what, size_t index, const char* reference,
                        const HopMeta& expected, const HopMeta& got);

// Checks count, definedness and metadata of `outputs` against `expected` (named `reference`,
// e.g. "carried": "output 1 of body_fn has shape [3] Float32 but carried[1] has shape [2]
// Float32").
void check_outputs_match(const char* op, const char* what, const TensorList& outputs,
                         const char* reference, const TensorList& expected);

// A predicate or loop condition: defined, exactly one element. Returns its truth value
// (nonzero is true, as bool(tensor) in PyTorch); reading it is a sync point.
bool read_predicate(const char* op, const char* what, const Tensor& pred);

}  // namespace kiln::hop
