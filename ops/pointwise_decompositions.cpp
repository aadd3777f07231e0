// Decompositions of the composite pointwise ops (ops/decomposition.h): each writes the op chain
// its eager vector math or scalar functor evaluates, in the same order with the same constants
// (ops/cpu/pointwise_functors.h, ops/cpu/vecmath/), so the primitives give the eager bits (NaN
// sign and payload aside). Only same-dtype floating calls are covered: an integer input would
// first be converted to Float32 by the composite, which the chain would not do.
//
// Not decomposed, and why:
// - sigmoid, tanh, erf, exp, ...: primitives of the loop IR (their vector math has no op chain).
// - clamp: max/min would treat a NaN bound differently; it lowers to selects already.
// - pow with another exponent: the eager kernel calls libm pow, which no chain reproduces.
// - softmax, log_softmax, logsumexp: lowered into row kernels directly (jit/lower/lower_reduce.h);
//   layer_norm: rewritten into reductions by jit/passes/layer_norm_split.h (entries here are
//   pointwise only); cross_entropy: its kernel gathers each row's target logit.
// - dropout: its mask and scale come from one random draw per element inside the kernel.
#include <cstdint>

#include "ops/decomposition.h"
#include "ops/op_registry.h"

namespace kiln {

namespace {

bool same_float(const DecompositionCall& c) {
  return is_floating(c.out_dtype) && c.input_dtypes.size() == 1 && c.input_dtypes[0] == c.out_dtype;
}

// gelu(x) = (0.5 * x) * (1 + erf(x * M_SQRT1_2)): vecmath::gelu (erf.h).
DecompValue gelu(DecompositionEmitter& e, const DecompositionCall& c) {
  if (!same_float(c)) return kNoDecomposition;
  const DType d = c.out_dtype;
  const DecompValue x = c.inputs[0];
  const DecompValue erf =
      e.unary(OpId::Erf, e.scalar_right(OpId::Mul, x, 0.70710678118654752440, d), d);
  const DecompValue one_plus = e.scalar_left(OpId::Add, 1.0, erf, d);
  const DecompValue half_x = e.scalar_left(OpId::Mul, 0.5, x, d);
  return e.binary(OpId::Mul, half_x, one_plus, d);
}

// gelu_tanh(x) = (0.5 * x) * (1 + tanh(c * (x + ((0.044715 * x) * x) * x))):
// vecmath::gelu_tanh (tanh_sigmoid.h).
DecompValue gelu_tanh(DecompositionEmitter& e, const DecompositionCall& c) {
  if (!same_float(c)) return kNoDecomposition;
  const DType d = c.out_dtype;
  const DecompValue x = c.inputs[0];
  const DecompValue a = e.scalar_left(OpId::Mul, 0.044715, x, d);
  const DecompValue cube = e.binary(OpId::Mul, e.binary(OpId::Mul, a, x, d), x, d);
  const DecompValue inner =
      e.scalar_left(OpId::Mul, 0.79788456080286535588, e.binary(OpId::Add, x, cube, d), d);
  const DecompValue one_plus = e.scalar_left(OpId::Add, 1.0, e.unary(OpId::Tanh, inner, d), d);
  const DecompValue half_x = e.scalar_left(OpId::Mul, 0.5, x, d);
  return e.binary(OpId::Mul, half_x, one_plus, d);
}

// silu(x) = x * sigmoid(x): vecmath::silu (tanh_sigmoid.h).
DecompValue silu(DecompositionEmitter& e, const DecompositionCall& c) {
  if (!same_float(c)) return kNoDecomposition;
  const DType d = c.out_dtype;
  return e.binary(OpId::Mul, c.inputs[0], e.unary(OpId::Sigmoid, c.inputs[0], d), d);
}

// rsqrt(x) = 1 / sqrt(x): RsqrtF.
DecompValue rsqrt(DecompositionEmitter& e, const DecompositionCall& c) {
  if (!same_float(c)) return kNoDecomposition;
  const DType d = c.out_dtype;
  return e.unary(OpId::Reciprocal, e.unary(OpId::Sqrt, c.inputs[0], d), d);
}

// reciprocal(x) = 1 / x: ReciprocalF.
DecompValue reciprocal(DecompositionEmitter& e, const DecompositionCall& c) {
  if (!same_float(c)) return kNoDecomposition;
  return e.scalar_left(OpId::Div, 1.0, c.inputs[0], c.out_dtype);
}

// square(x) = x * x: SquareF.
DecompValue square(DecompositionEmitter& e, const DecompositionCall& c) {
  if (!same_float(c)) return kNoDecomposition;
  return e.binary(OpId::Mul, c.inputs[0], c.inputs[0], c.out_dtype);
}

// isnan(x) = x != x: IsnanF. Exposes fusion: as a comparison, the planner inlines it as a mask
// into a where or masked_fill (x.masked_fill(x.isnan(), 0) is one kernel).
DecompValue isnan(DecompositionEmitter& e, const DecompositionCall& c) {
  if (c.input_dtypes.size() != 1 || !is_floating(c.input_dtypes[0])) return kNoDecomposition;
  return e.binary(OpId::Ne, c.inputs[0], c.inputs[0], DType::Bool);
}

// pow(x, 2) = x * x and pow(x, 0.5) = sqrt(x): the cases PowScalarF computes without libm pow
// (pow(x, 1) = x is the algebraic simplifier's, jit/passes/simplify.h).
DecompValue pow_scalar(DecompositionEmitter& e, const DecompositionCall& c) {
  if (!same_float(c)) return kNoDecomposition;
  const double ex = c.attrs.scalars[0].to_double();
  if (ex == 2.0) return e.binary(OpId::Mul, c.inputs[0], c.inputs[0], c.out_dtype);
  if (ex == 0.5) return e.unary(OpId::Sqrt, c.inputs[0], c.out_dtype);
  return kNoDecomposition;
}

}  // namespace

void register_pointwise_decompositions() {
  register_decomposition(OpId::Gelu, gelu);
  register_decomposition(OpId::GeluTanh, gelu_tanh);
  register_decomposition(OpId::Silu, silu);
  register_decomposition(OpId::Rsqrt, rsqrt);
  register_decomposition(OpId::Reciprocal, reciprocal);
  register_decomposition(OpId::Square, square);
  register_decomposition(OpId::Isnan, isnan);
  register_decomposition(OpId::PowScalar, pow_scalar);
}

}  // namespace kiln
