#include "jit/lower/lower_reduce.h"

#include <algorithm>
#include <limits>

#include "runtime/dispatcher.h"

namespace kiln::jit {

namespace {

// Whether reduction `n` over an input of dtype `in` lowers as far as dtypes go (the eager op's
// result dtype; the CPU kernels compute floats, flags, Int64 indices and Int64 sums).
bool dtypes_lower(const tracer::Node& n, DType in) {
  const bool fl = in == DType::Float32 || in == DType::Float64;
  const DType out = n.meta.dtype;
  switch (n.op) {
    case OpId::Sum:  // integers and Bool: an Int64 sum (product), wrapping (exact in any order)
    case OpId::Prod:
      return fl ? out == in
                : (in == DType::Int32 || in == DType::Int64 || in == DType::Bool) &&
                      out == DType::Int64;
    case OpId::Logsumexp:  // an integer input is computed in Float32, as eager does
      return fl ? out == in : (in == DType::Int32 || in == DType::Int64) && out == DType::Float32;
    case OpId::Argmax:  // Int32 compared as Float64: exact
    case OpId::Argmin:
      return (fl || in == DType::Int32) && out == DType::Int64;
    case OpId::All:
    case OpId::Any:
      return (fl || in == DType::Int32 || in == DType::Int64 || in == DType::Bool) &&
             out == DType::Bool;
    default:
      return fl && out == in;
  }
}

// The dims reduction `n` reduces over `in` as a mask when it may lower at all (0 where not):
// sum, mean, prod, amax, amin, argmax, argmin, and where `rows` also var, logsumexp, all, any;
// dtypes as dtypes_lower says; on the CPU.
uint64_t lowerable_mask(const tracer::Node& n, const tracer::ValueMeta& in, bool rows) {
  switch (n.op) {
    case OpId::Sum:
    case OpId::Mean:
    case OpId::Prod:
    case OpId::Amax:
    case OpId::Amin:
    case OpId::Argmax:  // over columns: ReduceArgMax, one pass (lower_reduction)
    case OpId::Argmin:
      break;
    case OpId::Var:  // rows only: eager gathers the columns of these
    case OpId::Logsumexp:
    case OpId::Softmax:  // an element value per element, computed from two row values
    case OpId::LogSoftmax:
    case OpId::All:
    case OpId::Any:
      if (rows) break;
      return 0;
    default:
      return 0;
  }
  if (!n.subgraphs.empty() || n.meta.device != Device::cpu() || in.device != Device::cpu() ||
      !n.meta.strides.empty() || !dtypes_lower(n, in.dtype))
    return 0;
  const int64_t rank = static_cast<int64_t>(in.sizes.size());
  if (rank == 0 || rank >= 64) return 0;
  if (n.op == OpId::Softmax || n.op == OpId::LogSoftmax) {  // attrs.ints[0]: its one dim
    const int64_t d = n.attrs.ints.empty() ? -1 : n.attrs.ints[0];
    const int64_t w = d < 0 ? d + rank : d;
    return w < 0 || w >= rank ? 0 : uint64_t{1} << w;
  }
  if (n.attrs.dims.empty() || n.op == OpId::All || n.op == OpId::Any)
    return (uint64_t{1} << rank) - 1;
  uint64_t mask = 0;
  for (int64_t d : n.attrs.dims) {
    const int64_t w = d < 0 ? d + rank : d;
    if (w < 0 || w >= rank) return 0;
    mask |= uint64_t{1} << w;
  }
  return mask;
}

}  // namespace

bool trailing_dims_dense(const tracer::ValueMeta& m, size_t k) {
  if (m.strides.empty()) return true;
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > m.sizes.size() - std::min(k, m.sizes.size());) {
    if (m.sizes[d] == 1) continue;
    if (m.strides[d] != expected) return false;
    expected *= m.sizes[d];
  }
  return true;
}

bool reduces_in_column_order(const tracer::ValueMeta& m) {
  return trailing_dims_dense(m, m.sizes.size());
}

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

int32_t lower_reduction(LoopKernel& k, const tracer::Node& n, int32_t x, bool columns) {
  if ((n.op == OpId::Argmax || n.op == OpId::Argmin) && columns)  // eager's run_arg_cols
    return k.reduce_arg(n.op == OpId::Argmax ? ExprOp::ReduceArgMax : ExprOp::ReduceArgMin,
                        k.as_type(x, DType::Float64));
  if (n.op == OpId::Argmax || n.op == OpId::Argmin) {  // eager's arg_range: the first extreme
    const DType t = k.exprs[x].type;
    const DType c = is_floating(t) ? t : DType::Float64;
    const int32_t v = t == c ? x : k.cast(x, c);
    const int32_t m = k.reduce(n.op == OpId::Argmax ? ExprOp::ReduceMax : ExprOp::ReduceMin, v);
    const int32_t both_nan =
        k.binary(ExprOp::And, k.binary(ExprOp::Ne, m, m), k.binary(ExprOp::Ne, v, v));
    const int32_t hit = k.binary(ExprOp::Or, k.binary(ExprOp::Eq, v, m), both_nan);
    return k.reduce_first(k.select(hit, k.constant(1.0, c), k.constant(0.0, c)));
  }
  if (n.op == OpId::All || n.op == OpId::Any) {  // x != 0 (NaN too) as a 0 / 1 flag
    const DType t = k.exprs[x].type;
    int32_t nonzero = x;
    if (t != DType::Bool)
      nonzero = k.binary(ExprOp::Ne, x, is_floating(t) ? k.constant(0.0, t) : k.constant_int(0, t));
    const int32_t flag =
        k.select(nonzero, k.constant(1.0, DType::Float32), k.constant(0.0, DType::Float32));
    const int32_t r = k.reduce(n.op == OpId::All ? ExprOp::ReduceMin : ExprOp::ReduceMax, flag);
    return k.binary(ExprOp::Gt, r, k.constant(0.5, DType::Float32));
  }
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
  if (n.op == OpId::LogSoftmax) {  // eager's softmax_rows with `log`: x - (max + log(sum(e)))
    const int32_t m = k.reduce(ExprOp::ReduceMax, x);
    const int32_t s =
        k.reduce(ExprOp::ReduceSum, k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, m)));
    return k.binary(ExprOp::Sub, x, k.binary(ExprOp::Add, m, k.unary(ExprOp::Log, s)));
  }
  if (n.op == OpId::Softmax) {  // eager's softmax_rows (ops/reduce.h): e * (1 / sum(e))
    const int32_t e =
        k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, k.reduce(ExprOp::ReduceMax, x)));
    const int32_t r = k.binary(ExprOp::Div, k.constant(1.0, t), k.reduce(ExprOp::ReduceSum, e));
    return k.binary(ExprOp::Mul, e, r);
  }
  switch (n.op) {
    case OpId::Sum:  // an integer or Bool input sums as Int64 (eager's wrapping uint64)
      return k.reduce(ExprOp::ReduceSum, is_floating(t) ? x : k.as_type(x, DType::Int64));
    case OpId::Prod:  // likewise as Int64 (eager's wrapping uint64 product)
      return k.reduce(ExprOp::ReduceProd, is_floating(t) ? x : k.as_type(x, DType::Int64));
    case OpId::Amax:
      return k.reduce(ExprOp::ReduceMax, x);
    case OpId::Amin:
      return k.reduce(ExprOp::ReduceMin, x);
    case OpId::Mean: {
      // attrs.ints[1]: a count subtracted from n (ops/reduce.cpp), then NaN over no elements
      const int64_t correction = n.attrs.ints.size() > 1 ? n.attrs.ints[1] : 0;
      if (correction == 0)
        return k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(t));
      const int32_t m =
          k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(t, -correction));
      const int32_t empty = k.binary(ExprOp::Eq, k.row_size(t), k.constant(0.0, t));
      return k.select(empty, k.constant(std::numeric_limits<double>::quiet_NaN(), t), m);
    }
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
