// The loop IR of one kernel (DESIGN.md, "JIT"): what every kernel target renders. A kernel is
//   - an index space whose rank and sizes are launch arguments (never part of the kernel: one
//     kernel serves every batch size);
//   - operands: outputs first, then inputs, each a pointer with per-dim strides given at launch
//     (contiguous, broadcast with stride 0, or any stride: the target specializes per launch);
//   - an expression DAG in SSA order: loads of inputs, constants, runtime parameters (promoted
//     scalars), and element-wise math;
//   - stores: expression k is written to output k at every index.
// Every value is computed in one floating dtype (`dtype`: Float32 or Float64) or is a lane mask
// (the result of a compare, consumed by Select). The operations are exactly those of the eager
// kernels' scalar functors (ops/cpu/pointwise_functors.h) and the shared vector math
// (ops/cpu/vecmath/), so a kernel gives the eager bits: no reassociation, no FMA contraction.
//
// The text form (to_text) is stable and used by golden tests and KILN_DUMP; encode() is the one
// canonical encoding that the kernel cache hashes and compares word for word.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace kiln::jit {

// clang-format off
#define KILN_FOR_EACH_EXPR_OP(X)                                                           \
  /* leaves */ X(Load) X(Const) X(Param)                                                   \
  /* unary float */ X(Neg) X(Abs) X(Sqrt) X(Rsqrt) X(Reciprocal) X(Square) X(Relu) X(Sign)  \
  X(Exp) X(Log) X(Log1p) X(Expm1) X(Tanh) X(Sigmoid) X(Silu) X(Erf) X(Sin) X(Cos) X(Gelu)    \
  X(GeluTanh)                                                                              \
  /* binary float */ X(Add) X(Sub) X(Mul) X(Div) X(Maximum) X(Minimum)                     \
  /* compares: float, float -> mask */ X(Lt) X(Le) X(Gt) X(Ge) X(Eq) X(Ne)                  \
  /* mask, float, float -> float */ X(Select)
// clang-format on

enum class ExprOp : uint8_t {
#define KILN_EXPR_ENUM(name) name,
  KILN_FOR_EACH_EXPR_OP(KILN_EXPR_ENUM)
#undef KILN_EXPR_ENUM
      kCount
};

const char* expr_op_name(ExprOp op);
int expr_arity(ExprOp op);               // operands read (0 for leaves)
bool expr_is_compare(ExprOp op);         // produces a mask
bool expr_is_transcendental(ExprOp op);  // written with the shared vector math

struct Expr {
  ExprOp op{};
  int32_t a = -1, b = -1, c = -1;  // operand expressions (earlier in the list)
  int32_t index = -1;              // Load: input number; Param: parameter number
  double value = 0;                // Const: the value (exactly representable in `dtype`)
  friend bool operator==(const Expr&, const Expr&) = default;
};

struct LoopKernel {
  DType dtype = DType::Float32;  // of every loaded, computed and stored float value
  int32_t num_inputs = 0;
  int32_t num_params = 0;
  std::vector<Expr> exprs;
  std::vector<int32_t> stores;  // output k stores exprs[stores[k]]

  int32_t num_outputs() const { return static_cast<int32_t>(stores.size()); }
  int32_t num_operands() const { return num_outputs() + num_inputs; }

  // Builders: append an expression, returning its id.
  int32_t load(int32_t input);
  int32_t constant(double v);
  int32_t param(int32_t k);
  int32_t unary(ExprOp op, int32_t a);
  int32_t binary(ExprOp op, int32_t a, int32_t b);
  int32_t select(int32_t mask, int32_t a, int32_t b);

  // Checks the invariants (operands defined before use, masks only where masks go, loads and
  // params in range, at least one store); throws kiln::Error naming the expression.
  void verify() const;

  friend bool operator==(const LoopKernel&, const LoopKernel&) = default;
};

// Stable, readable text: one line per expression ("%3 = mul %1 %2"), then the stores.
std::string to_text(const LoopKernel& k);

// The canonical encoding: every field, in order. Equal encodings mean equal kernels.
std::vector<uint64_t> encode(const LoopKernel& k);
uint64_t hash_words(const std::vector<uint64_t>& words);

}  // namespace kiln::jit
