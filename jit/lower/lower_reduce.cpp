#include "jit/lower/lower_reduce.h"

#include <limits>

#include "runtime/dispatcher.h"

namespace kiln::jit {

namespace {

// The dims reduction `n` reduces over `in` as a mask when it may lower at all (0 where not):
// one of `ops` (Var and Logsumexp only where `var`), float input and output of one dtype (an
// integer logsumexp: Int32 / Int64 in, Float32 out), on the CPU.
uint64_t lowerable_mask(const tracer::Node& n, const tracer::ValueMeta& in, bool var) {
  switch (n.op) {
    case OpId::Sum:
    case OpId::Mean:
    case OpId::Prod:
    case OpId::Amax:
    case OpId::Amin:
      break;
    case OpId::Var:
    case OpId::Logsumexp:  // (rows only: eager gathers columns for both)
      if (var) break;
      return 0;
    default:
      return 0;
  }
  if (!n.subgraphs.empty() || n.meta.device != Device::cpu() || in.device != Device::cpu() ||
      !n.meta.strides.empty())
    return 0;
  const bool int_lse =
      n.op == OpId::Logsumexp && (in.dtype == DType::Int32 || in.dtype == DType::Int64) &&
      n.meta.dtype == DType::Float32;  // eager computes an integer input's in Float32
  if (!int_lse &&
      ((in.dtype != DType::Float32 && in.dtype != DType::Float64) || n.meta.dtype != in.dtype))
    return 0;
  const int64_t rank = static_cast<int64_t>(in.sizes.size());
  if (rank == 0 || rank >= 64) return 0;
  if (n.attrs.dims.empty()) return (uint64_t{1} << rank) - 1;
  uint64_t mask = 0;
  for (int64_t d : n.attrs.dims) {
    const int64_t w = d < 0 ? d + rank : d;
    if (w < 0 || w >= rank) return 0;
    mask |= uint64_t{1} << w;
  }
  return mask;
}

}  // namespace

int row_reduction_dims(const tracer::Node& n, const tracer::ValueMeta& in) {
  const uint64_t mask = lowerable_mask(n, in, true);
  if (mask == 0) return 0;
  const int64_t rank = static_cast<int64_t>(in.sizes.size());
  int r = 0;  // the reduced dims must be exactly the last r
  while (r < rank && (mask >> (rank - 1 - r)) & 1u) ++r;
  if (r == 0 || (mask & ((uint64_t{1} << (rank - r)) - 1)) != 0) return 0;
  return r;
}

ColumnDims column_reduction_dims(const tracer::Node& n, const tracer::ValueMeta& in) {
  const uint64_t mask = lowerable_mask(n, in, false);
  if (mask == 0) return {};
  const int rank = static_cast<int>(in.sizes.size());
  int last = rank - 1;  // the last reduced dim, then the first of its block
  while (last >= 0 && !((mask >> last) & 1u)) --last;
  if (last < 0 || last == rank - 1) return {};  // nothing kept after it: a row reduction
  int first = last;
  while (first > 0 && (mask >> (first - 1)) & 1u) --first;
  if ((mask & ((uint64_t{1} << first) - 1)) != 0) return {};  // not one block
  return {last - first + 1, rank - 1 - last};
}

int32_t lower_reduction(LoopKernel& k, const tracer::Node& n, int32_t x) {
  if (n.op == OpId::Logsumexp) {  // eager's logsumexp_rows
    const DType c = n.meta.dtype;
    const int32_t v = k.exprs[x].type == c ? x : k.cast(x, c);
    const int32_t m = k.reduce(ExprOp::ReduceMax, v);
    const int32_t inf = k.constant(std::numeric_limits<double>::infinity(), c);
    const int32_t is_inf = k.binary(ExprOp::Eq, k.unary(ExprOp::Abs, m), inf);
    const int32_t shift = k.select(is_inf, k.constant(0.0, c), m);
    const int32_t s =
        k.reduce(ExprOp::ReduceSum, k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, v, shift)));
    return k.binary(ExprOp::Add, k.unary(ExprOp::Log, s), shift);
  }
  const DType t = k.exprs[x].type;
  switch (n.op) {
    case OpId::Sum:
      return k.reduce(ExprOp::ReduceSum, x);
    case OpId::Prod:
      return k.reduce(ExprOp::ReduceProd, x);
    case OpId::Amax:
      return k.reduce(ExprOp::ReduceMax, x);
    case OpId::Amin:
      return k.reduce(ExprOp::ReduceMin, x);
    case OpId::Mean:
      return k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(t));
    default:
      break;
  }
  // Var: eager's var_rows.
  const bool unbiased = n.attrs.ints.size() > 1 && n.attrs.ints[1] != 0;
  const int32_t mean = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(t));
  const int32_t d = k.binary(ExprOp::Sub, x, mean);
  const int32_t ss = k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, d, d));
  int32_t v = k.binary(ExprOp::Div, ss, k.row_size(t, unbiased ? -1 : 0));
  if (unbiased) {
    const int32_t empty = k.binary(ExprOp::Eq, k.row_size(t), k.constant(0.0, t));
    v = k.select(empty, k.constant(std::numeric_limits<double>::quiet_NaN(), t), v);
  }
  return v;
}

}  // namespace kiln::jit
