// The op vocabulary: every op the dispatcher knows, as an X-macro list. Each op's definition
// (meta function, eager kernel, later backward rule and decomposition) lives in ops/.
// Order is part of nothing: ids are only compared within one process.
#pragma once
#include <cstdint>

// clang-format off
#define KILN_FOR_EACH_OP(X)                                                              \
  /* views: outputs alias input 0 */                                                     \
  X(View) X(Expand) X(Permute) X(Slice) X(Select) X(Unsqueeze) X(Squeeze) X(AsStrided)   \
  /* data movement and factories */                                                      \
  X(Copy) X(Cast) X(Fill) X(Arange) X(Linspace) X(Eye) X(Rand) X(Randn) X(Randint)       \
  /* unary pointwise */                                                                  \
  X(Neg) X(Abs) X(Exp) X(Log) X(Log1p) X(Expm1) X(Sqrt) X(Rsqrt) X(Reciprocal) X(Sin)    \
  X(Cos) X(Tanh) X(Sigmoid) X(Relu) X(Silu) X(Erf) X(Floor) X(Ceil) X(Round) X(Sign)     \
  X(Gelu) X(GeluTanh) X(Isnan) X(LogicalNot) X(Square) X(PowScalar) X(Clamp)             \
  /* binary pointwise (tensor-tensor or tensor-scalar) */                                \
  X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Maximum) X(Minimum) X(Eq) X(Ne) X(Lt) X(Le) X(Gt) \
  X(Ge) X(LogicalAnd) X(LogicalOr)                                                       \
  /* ternary pointwise */                                                                \
  X(Where) X(MaskedFill)                                                                 \
  /* reductions */                                                                       \
  X(Sum) X(Mean) X(Prod) X(Amax) X(Amin) X(Logsumexp) X(Argmax) X(Argmin) X(Var) X(All)  \
  X(Any)                                                                                 \
  /* linear algebra and nn */                                                            \
  X(Matmul) X(Softmax) X(LogSoftmax) X(LayerNorm) X(Dropout) X(CrossEntropy)             \
  X(CrossEntropyCount) X(CrossEntropyTargetLogit) X(IndicesOf)                           \
  /* shape and indexing (stack is a composite of unsqueeze and cat) */                   \
  X(Cat) X(IndexSelect) X(Gather) X(ScatterAdd) X(ScatterRowIndex) X(ScatterRowValue)    \
  X(OneHot) X(OneHotClass) X(Tril) X(Triu) X(Embedding)                                  \
  /* functional writes through a view (the recorder's functionalization) */              \
  X(AsStridedScatter)                                                                    \
  /* higher-order nodes of recorded graphs (tracer/hop_nodes.h): never dispatched */     \
  X(Cond) X(WhileLoop) X(Scan) X(Map) X(Call) X(TupleGet)
// clang-format on

namespace kiln {

enum class OpId : uint16_t {
#define KILN_OP_ENUM(name) name,
  KILN_FOR_EACH_OP(KILN_OP_ENUM)
#undef KILN_OP_ENUM
      kCount
};

inline constexpr int kNumOps = static_cast<int>(OpId::kCount);

// The op's name as users call it, for messages: "add", "log_softmax".
const char* op_name(OpId id);
// The id's own CamelCase spelling: "Add", "LogSoftmax" (autograd node names: "AddBackward").
const char* op_id_name(OpId id);

}  // namespace kiln
