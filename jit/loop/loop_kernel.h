// The loop IR of one kernel (DESIGN.md, "JIT"): what every kernel target renders. A kernel is
//   - an index space whose rank and sizes are launch arguments (never part of the kernel: one
//     kernel serves every batch size);
//   - operands: outputs first, then inputs, each a pointer with per-dim strides given at launch
//     (contiguous, broadcast with stride 0, or any stride: the target specializes per launch);
//     each input has a storage dtype (`inputs`), each output the type of the value it stores;
//   - an expression DAG in SSA order: loads of inputs, constants, runtime parameters (promoted
//     scalars), casts and element-wise math;
//   - stores: expression k is written to output k at every index (a row value: once per row).
// One leaf depends on the element's position: RandUniform (Float32 or Float64) is the uniform
// number of docs/random.md, random_uniform<T>(seed, counter + i) with i the element's row-major
// index in the index space (whatever the launcher coalesces or splits); its seed and counter are
// four Int32 params from `index` on (seed low and high words, counter low and high words).
// Row kernels (reductions, docs/jit.md "Reductions"): a kernel with Reduce expressions
// (ReduceSum, ReduceProd, ReduceMax, ReduceMin) reduces the innermost dims of its index space (how
// many is a launch argument, LaunchArgs::reduced_dims): together they are the *row*, the dims
// above them the rows. A Reduce's operand is an *element value* evaluated at every element of the
// row (the fused pointwise prologue); its result is one *row value* per row. An expression whose
// operands are all row values, float constants, float params, RowSize (the row's element count
// plus the expression's `ivalue`, converted to its float type as static_cast does) or row loads
// (a float Load with `ivalue` 1: an input constant along the row, whose sizes are 1 over the
// reduced dims, read once per row; a target declines one it cannot render) is a row value too;
// one that reads another Load (other than through a Reduce) is an element value. Element values may
// read row values (broadcast over the row): `exp(x - max) / sum` is the epilogue of a softmax.
// ReduceFirst is the one Reduce of another type: its operand is a float flag per element, its
// result the Int64 row index of the first element whose flag is nonzero (NaN counts), or the
// row's length where there is none: order-free (argmax is `ReduceFirst(x == ReduceMax(x) or
// both NaN)`), so a target may stop at the first hit. Its pass stashes nothing (row_stash).
// ReduceArgMax / ReduceArgMin (column kernels only: the planner lowers argmax / argmin over
// columns to them, a row kernel keeps the two passes above) are the other two: operand a float
// element value, result the Int64 index of the first row holding the column's extreme, a NaN
// being the extreme and the first NaN winning (eager's `better`: a tie keeps the earlier row).
// Order-free like ReduceFirst, so a target folds them in any fixed order of (value, row) pairs.
// Each Reduce is one pass over the row, in expression order (a Reduce may read the results of
// earlier ones: the variance's second pass reads the mean); element stores follow in a final
// pass, row stores are written once per row (their output's strides over the row are 0).
// Reduce values are numbers: Float32, Float64, or Int32/Int64, which wrap in two's complement
// (exact in any order; the CPU planner lowers float reductions only, the CUDA target renders all).
// The combining order is fixed per target, never by the ISA, the thread count or the launch
// geometry. On the CPU it is the eager kernels' (ops/cpu/reduce_loops.h), so a row kernel gives
// the eager bits; the CUDA target uses its own fixed tree of the row length (jit/cuda/render.h,
// docs/cuda.md states its bound against the CPU). The CPU's order:
//   - the row is cut into chunks of 65536 elements, whose results combine in tree_combine's
//     fixed pairwise tree (earlier chunk on the left);
//   - ReduceSum: each chunk pairwise (split at ceil8(len / 2) down to blocks of <= 128); a block
//     sums in 8 lanes (lane k takes elements 8i + k of the block's first floor8(len) elements),
//     the lanes combine as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), then the rest add in order;
//   - ReduceProd: each chunk as one block of 8 lanes, as ReduceSum's blocks (with *);
//   - ReduceMax/ReduceMin (NaN propagating): a chunk of at least 16 (Float32) / 8 (Float64)
//     elements takes its first floor(len / L) * L elements in L = 8 / 4 lanes (a lane keeps the
//     later of equal values: +0 and -0), NaN if any was NaN, else the lanes fold in order from
//     -inf / +inf; the rest fold in order (a shorter chunk: all of it).
// Column kernels: the same IR launched with LaunchArgs::inner_dims > 0 reduces a block of dims
// in the middle of the index space instead: sizes = [outer..., reduced..., inner...] with the last
// `inner_dims` dims kept (the *columns*) and the `reduced_dims` before them reduced (`x.sum(0)` of
// an [N, C] tensor: one column per c). A row value is then one value per (outer, column); the
// kernel itself does not change (which dims reduce is a launch argument, as for rows), so one
// loop kernel serves both. A column kernel has one reducing pass: its Reduce operands never
// read a reduction's result; element values may (an epilogue, `x - x.mean(0)`: a target stores
// the element values in a second pass over the rows once the columns are reduced), else they
// are stored in the reducing pass; row stores follow the reducing pass. Its combining
// order is eager's run_cols (ops/cpu/reduce_loops.h), the same for every column and every op:
//   - the reduced rows are cut into chunks of 2048, combined in tree_combine's tree;
//   - a chunk is halved (at floor(len / 2)) down to runs of at most 64 rows, halves combined
//     earlier-left; a run folds its rows in order, starting from the op's identity.
// Eager takes that order only for a row-major reduced value with at least 16 columns (else it
// gathers the columns into rows: the row order); a target declines other launches (the plan
// runs the step's nodes eagerly for that run). Targets vectorize along the columns (a lane per
// column), so any vector width and thread split gives the same bits.
// Every expression has a value type (`Expr::type`): Float32, Float64, Int32, Int64, or Bool (a
// lane mask: compares produce one, Select and the logical ops consume them). Types never change
// implicitly: a Load yields its input's storage dtype (a Bool byte becomes a mask), a store writes
// its expression's type (a mask becomes a byte 0 or 1), operands of an op share its type, and
// the only conversion is Cast, with the eager cast's semantics (static_cast as x86 performs it:
// float -> int truncates, NaN and out-of-range give the integer minimum; int -> float rounds to
// nearest even; number -> Bool is `x != 0`, NaN included; Bool -> number is 0 or 1). The
// operations are exactly those of the eager kernels' scalar functors
// (ops/cpu/pointwise_functors.h) and the shared vector math (ops/cpu/vecmath/), so a kernel gives
// the eager bits: no reassociation, no FMA contraction of the graph's own multiplies and adds
// (the vector math's fused multiply-adds are its own, the same in eager: vecmath/vec_ops.h).
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
  /* leaves */ X(Load) X(Const) X(Param) X(RandUniform)                                    \
  /* unary float */ X(Neg) X(Abs) X(Sqrt) X(Rsqrt) X(Reciprocal) X(Square) X(Relu) X(Sign)  \
  X(Exp) X(Log) X(Log1p) X(Expm1) X(Tanh) X(Sigmoid) X(Silu) X(Erf) X(Sin) X(Cos) X(Gelu)    \
  X(GeluTanh)                                                                              \
  /* binary float */ X(Add) X(Sub) X(Mul) X(Div) X(Maximum) X(Minimum)                     \
  /* binary: vecmath::pow (floats), int_pow (integers) */ X(Pow)                           \
  /* compares: float, float -> mask */ X(Lt) X(Le) X(Gt) X(Ge) X(Eq) X(Ne)                  \
  /* mask, float, float -> float */ X(Select)                                              \
  /* conversion between value types */ X(Cast)                                             \
  /* rounding to an integral float (round: half to even) */ X(Floor) X(Ceil) X(Round)      \
  /* masks */ X(And) X(Or) X(Not)                                                        \
  /* row kernels: element value -> row value (numbers) */                                 \
  X(ReduceSum) X(ReduceProd) X(ReduceMax) X(ReduceMin)                                     \
  /* row kernels: float flag -> Int64 index of the first nonzero */ X(ReduceFirst)         \
  /* leaf: the row's element count + ivalue, as a float */ X(RowSize)                     \
  /* column kernels: float value -> Int64 index of its first extreme */                     \
  X(ReduceArgMax) X(ReduceArgMin)
// clang-format on

enum class ExprOp : uint8_t {
#define KILN_EXPR_ENUM(name) name,
  KILN_FOR_EACH_EXPR_OP(KILN_EXPR_ENUM)
#undef KILN_EXPR_ENUM
      kCount
};

const char* expr_op_name(ExprOp op);
int expr_arity(ExprOp op);               // operands read (0 for leaves)
bool expr_is_compare(ExprOp op);         // produces a mask from two numbers
bool expr_is_transcendental(ExprOp op);  // written with the shared vector math
bool expr_is_reduce(ExprOp op);          // ReduceSum .. ReduceFirst, ReduceArgMax, ReduceArgMin
bool expr_is_arg_reduce(ExprOp op);      // ReduceArgMax, ReduceArgMin
// The value types `op` computes in (its result type for all but compares and Cast): every
// numeric type, floats only, or Bool only (the mask ops).
bool expr_accepts(ExprOp op, DType type);

struct Expr {
  ExprOp op{};
  int32_t a = -1, b = -1, c = -1;  // operand expressions (earlier in the list)
  int32_t index = -1;  // Load: input number; Param: parameter number; RandUniform: first param
  // (ivalue: a Const's integer value, RowSize's offset, 1 on a row load)
  double value = 0;             // Const of a float type (exactly representable in it)
  DType type = DType::Float32;  // the value type
  int64_t ivalue = 0;           // Const of an integer type or Bool (0 or 1); RowSize offset
  friend bool operator==(const Expr&, const Expr&) = default;
};

struct LoopKernel {
  std::vector<DType> inputs;  // the storage dtype of each input
  std::vector<DType> params;  // the value type of each runtime parameter (not Bool)
  std::vector<Expr> exprs;
  std::vector<int32_t> stores;  // output k stores exprs[stores[k]] (in its value type)

  // Every input and param of type `t` (the single-dtype kernels of tests and examples).
  static LoopKernel uniform(DType t, int num_inputs, int num_params = 0);

  int32_t num_inputs() const { return static_cast<int32_t>(inputs.size()); }
  int32_t num_params() const { return static_cast<int32_t>(params.size()); }
  int32_t num_outputs() const { return static_cast<int32_t>(stores.size()); }
  int32_t num_operands() const { return num_outputs() + num_inputs(); }
  DType output_dtype(int32_t k) const { return exprs[stores[k]].type; }
  // The storage dtype of operand j (outputs first, then inputs).
  DType operand_dtype(int32_t j) const {
    return j < num_outputs() ? output_dtype(j) : inputs[j - num_outputs()];
  }

  // Builders: append an expression, returning its id. The type follows from the operands
  // (compares and the mask ops give Bool, Select its values' type), the input or the param.
  int32_t load(int32_t input);
  int32_t load_row(int32_t input);           // a row load (float inputs of row kernels: see above)
  int32_t constant(double v, DType t);       // a float constant: v converted to t
  int32_t constant_int(int64_t v, DType t);  // an integer or Bool constant: v wrapped to t
  int32_t param(int32_t k);
  // A uniform draw of type t (Float32, Float64) from the Philox words in params [first, first+4).
  int32_t rand_uniform(int32_t first_param, DType t);
  // Whether an expression reads the element's linear index (RandUniform).
  bool uses_index() const;
  int32_t unary(ExprOp op, int32_t a);
  int32_t binary(ExprOp op, int32_t a, int32_t b);
  int32_t select(int32_t mask, int32_t a, int32_t b);
  int32_t cast(int32_t a, DType t);
  int32_t as_type(int32_t a, DType t);           // a itself when already of type t, else cast(a, t)
  int32_t reduce(ExprOp op, int32_t a);          // ReduceSum .. ReduceMin of an element value
  int32_t reduce_first(int32_t flag);            // ReduceFirst (Int64) of a float flag
  int32_t reduce_arg(ExprOp op, int32_t value);  // ReduceArgMax / ReduceArgMin (Int64) of a float
  int32_t row_size(DType t, int64_t offset = 0);  // (t)(row elements + offset)

  bool has_reduce() const;
  // Per expression: whether it is a row value (see the header), by the rule above.
  std::vector<uint8_t> row_values() const;
  // Per expression: whether it is an element value that computes a transcendental function per
  // element, itself or through the element values it reads (row values, computed once per row,
  // do not count): what a row kernel's pass pays again when it recomputes the value.
  std::vector<uint8_t> costly_element_values() const;

  // Checks the invariants (operands defined before use, operand and result types as each op
  // requires, constants representable, loads and params in range, at least one store); throws
  // kiln::Error naming the expression.
  void verify() const;

  friend bool operator==(const LoopKernel&, const LoopKernel&) = default;
};

// Stable, readable text: a header with the input and param types, one line per expression
// ("%3 = Mul %1 %2 : Float32"), then the stores.
std::string to_text(const LoopKernel& k);

// The canonical encoding: every field, in order. Equal encodings mean equal kernels.
std::vector<uint64_t> encode(const LoopKernel& k);
uint64_t hash_words(const std::vector<uint64_t>& words);

}  // namespace kiln::jit
