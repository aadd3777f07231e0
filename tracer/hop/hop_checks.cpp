#include "tracer/hop/hop_checks.h"

#include "runtime/error.h"

namespace kiln::hop {

HopMeta hop_meta(const Tensor& t) { return {t.impl()->sizes(), t.impl()->dtype()}; }

std::string describe_meta(const HopMeta& m) {
  return fmt::format("{} {}", shape_str(m.sizes), m.dtype);
}

void check_callable(const char* op, const char* what, bool callable) {
  KILN_CHECK(callable, "{}: {} is empty (a default-constructed std::function); pass a callable", op,
             what);
}

void check_defined_inputs(const char* op, const char* what, const TensorList& list) {
  for (size_t i = 0; i < list.size(); ++i)
    KILN_CHECK(list[i].defined(), "{}: {}[{}] is an undefined tensor", op, what, i);
}

void check_defined_outputs(const char* op, const char* what, const TensorList& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i)
    KILN_CHECK(outputs[i].defined(), "{}: output {} of {} is an undefined tensor", op, i, what);
}

void check_output_count(const char* op, const char* what, size_t got, const char* reference,
                        size_t expected) {
  KILN_CHECK(got == expected, "{}: {} returned {} tensors but {} has {}", op, what, got, reference,
             expected);
}

void check_same_outputs(const char* op, const char* what, size_t index, const char* reference,
                        const HopMeta& expected, const HopMeta& got) {
  KILN_CHECK(got == expected, "{}: output {} of {} has shape {} but {} has shape {}", op, index,
             what, describe_meta(got), reference, describe_meta(expected));
}

void check_outputs_match(const char* op, const char* what, const TensorList& outputs,
                         const char* reference, const TensorList& expected) {
  check_output_count(op, what, outputs.size(), reference, expected.size());
  check_defined_outputs(op, what, outputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    HopMeta want = hop_meta(expected[i]), got = hop_meta(outputs[i]);
    KILN_CHECK(got == want, "{}: output {} of {} has shape {} but {}[{}] has shape {}", op, i, what,
               describe_meta(got), reference, i, describe_meta(want));
  }
}

bool read_predicate(const char* op, const char* what, const Tensor& pred) {
  KILN_CHECK(pred.defined(), "{}: {} is an undefined tensor", op, what);
  KILN_CHECK(pred.impl()->numel() == 1,
             "{}: {} must have exactly one element, got a tensor of shape {} {}", op, what,
             shape_str(pred.impl()->sizes()), pred.impl()->dtype());
  return pred.item<bool>();
}

}  // namespace kiln::hop
