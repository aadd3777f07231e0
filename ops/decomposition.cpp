#include "ops/decomposition.h"

#include <array>

#include "ops/pointwise.h"
#include "runtime/error.h"
#include "runtime/init.h"

namespace kiln {

namespace {
std::array<DecompositionFn, kNumOps>& table() {
  static std::array<DecompositionFn, kNumOps> t{};
  return t;
}
}  // namespace

DecompValue DecompositionEmitter::unary(OpId op, DecompValue x, DType dtype) {
  const DecompValue in[] = {x};
  return emit(op, Attrs{}, in, dtype);
}

DecompValue DecompositionEmitter::binary(OpId op, DecompValue a, DecompValue b, DType dtype) {
  const DecompValue in[] = {a, b};
  return emit(op, Attrs{}, in, dtype);
}

DecompValue DecompositionEmitter::scalar_right(OpId op, DecompValue a, const Scalar& s,
                                               DType dtype) {
  Attrs at;
  at.ints[0] = kScalarRight;
  at.scalars[0] = s;
  const DecompValue in[] = {a};
  return emit(op, at, in, dtype);
}

DecompValue DecompositionEmitter::scalar_left(OpId op, const Scalar& s, DecompValue a,
                                              DType dtype) {
  Attrs at;
  at.ints[0] = kScalarLeft;
  at.scalars[0] = s;
  const DecompValue in[] = {a};
  return emit(op, at, in, dtype);
}

void register_decomposition(OpId op, DecompositionFn fn) {
  KILN_CHECK(static_cast<int>(op) < kNumOps, "register_decomposition: op id {} out of range",
             static_cast<int>(op));
  table()[static_cast<size_t>(op)] = fn;
}

DecompositionFn decomposition(OpId op) {
  ensure_initialized();  // the entries are registered by kiln::init(), as the ops are
  const auto i = static_cast<size_t>(op);
  return i < table().size() ? table()[i] : nullptr;
}

}  // namespace kiln
