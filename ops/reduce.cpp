// Definitions of the reduction ops: sum, mean, prod, amax, amin, logsumexp, argmax, argmin, var,
// all, any. The meta functions here hold PyTorch's dtype rules and every check; the kernels are
// in ops/cpu/reduce_kernels.cpp (compiled per ISA).
//
// Attrs: dims = the reduced dims as given (empty: all dims; may be negative);
//        ints[0] = keepdim; ints[1] = unbiased (Var), or for Mean a count subtracted from the
//        number of elements (0 from the API; 1 in the JIT's column var: the centered squares'
//        sum / (n - 1), jit/passes/column_split.h); for Amax/Amin 1 where an empty reduction
//        gives the identity (-inf / +inf, the lowest / highest integer) instead of an error (the
//        JIT's column logsumexp: its amax over a batch of no rows).
//        Argmax/Argmin: dims = {dim}. All/Any: every dim, no attrs.
#include "ops/reduce.h"

#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "ops/reduce_isa.h"

namespace kiln {

const char* reduce_name(OpId id) {
  switch (id) {
    case OpId::Sum:
      return "sum";
    case OpId::Mean:
      return "mean";
    case OpId::Prod:
      return "prod";
    case OpId::Amax:
      return "amax";
    case OpId::Amin:
      return "amin";
    case OpId::Logsumexp:
      return "logsumexp";
    case OpId::Argmax:
      return "argmax";
    case OpId::Argmin:
      return "argmin";
    case OpId::Var:
      return "var";
    case OpId::All:
      return "all";
    case OpId::Any:
      return "any";
    default:
      return op_name(id);
  }
}

uint64_t reduced_mask(const OpCall& c) {
  const TensorImpl* x = c.inputs[0].impl();
  if (c.op == OpId::All || c.op == OpId::Any) return dims_mask(reduce_name(c.op), {}, x->dim());
  return dims_mask(reduce_name(c.op), c.attrs.dims, x->dim());
}

namespace {

// The dtype a reduction writes (and, for the float ones, computes in).
DType reduce_out_dtype(const OpCall& c) {
  const DType in = c.inputs[0].impl()->dtype();
  const char* name = reduce_name(c.op);
  switch (c.op) {
    case OpId::Sum:
    case OpId::Prod:
      return is_floating(in) ? in : DType::Int64;
    case OpId::Mean:
    case OpId::Var:
      KILN_CHECK(is_floating(in),
                 "{}: expected a floating point input, got {} ({} is only defined for Float32 "
                 "and Float64; convert the input with .to(kFloat32))",
                 name, describe(c.inputs[0]), name);
      return in;
    case OpId::Logsumexp:
      return to_floating(in);
    case OpId::Argmax:
    case OpId::Argmin:
      KILN_CHECK(in != DType::Bool,
                 "{}: not supported for Bool input {} (expected a numeric dtype)", name,
                 describe(c.inputs[0]));
      return DType::Int64;
    case OpId::All:
    case OpId::Any:
      return DType::Bool;
    default:
      return in;  // Amax, Amin
  }
}

void reduce_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* x = c.inputs[0].impl();
  const char* name = reduce_name(c.op);
  if (c.op == OpId::Argmax || c.op == OpId::Argmin)
    KILN_CHECK(c.attrs.dims.size() == 1, "{}: expected exactly one dim, got {}", name,
               shape_str(c.attrs.dims));
  const uint64_t mask = reduced_mask(c);
  m.dtype = reduce_out_dtype(c);
  m.device = x->device();
  const bool keepdim = c.attrs.ints[0] != 0;
  const bool needs_values =
      c.op == OpId::Amax || c.op == OpId::Amin || c.op == OpId::Argmax || c.op == OpId::Argmin;
  m.sizes.clear();
  for (int64_t d = 0; d < x->dim(); ++d) {
    const bool r = (mask >> d) & 1u;
    if (r && needs_values && !((c.op == OpId::Amax || c.op == OpId::Amin) && c.attrs.ints[1]))
      KILN_CHECK(x->sizes()[d] != 0,
                 "{}: reduced dim {} of {} has size 0 (expected a non-empty reduction: the "
                 "result of an empty {} is undefined)",
                 name, d, describe(c.inputs[0]), name);
    if (!r)
      m.sizes.push_back(x->sizes()[d]);
    else if (keepdim)
      m.sizes.push_back(1);
  }
}

}  // namespace

void register_reduce_ops() {
  for (OpId id : {OpId::Sum, OpId::Mean, OpId::Prod, OpId::Amax, OpId::Amin, OpId::Logsumexp,
                  OpId::Argmax, OpId::Argmin, OpId::Var, OpId::All, OpId::Any})
    register_op(id, {reduce_name(id), reduce_meta, reduce_eager, kNoFlags});
}

void fail_not_a_reduction(OpId id) { fail("{}: not a reduction", reduce_name(id)); }

void reduce_eager(const OpCall& c, const Tensor& out) {
  switch (active_isa()) {
    case CpuIsa::Avx512:
      return isa_avx512::reduce_eager(c, out);
    case CpuIsa::Avx2:
      return isa_avx2::reduce_eager(c, out);
    case CpuIsa::Baseline:
      break;
  }
  isa_baseline::reduce_eager(c, out);
}

template <class T>
static void softmax_rows_isa(const T* x, T* y, int64_t m, int64_t n, bool log) {
  switch (active_isa()) {
    case CpuIsa::Avx512:
      return isa_avx512::softmax_rows(x, y, m, n, log);
    case CpuIsa::Avx2:
      return isa_avx2::softmax_rows(x, y, m, n, log);
    case CpuIsa::Baseline:
      break;
  }
  isa_baseline::softmax_rows(x, y, m, n, log);
}
void softmax_rows(const float* x, float* y, int64_t m, int64_t n, bool log) {
  softmax_rows_isa(x, y, m, n, log);
}
void softmax_rows(const double* x, double* y, int64_t m, int64_t n, bool log) {
  softmax_rows_isa(x, y, m, n, log);
}

template <class T>
static void softmax_cols_isa(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  switch (active_isa()) {
    case CpuIsa::Avx512:
      return isa_avx512::softmax_cols(x, y, outer, n, inner, log);
    case CpuIsa::Avx2:
      return isa_avx2::softmax_cols(x, y, outer, n, inner, log);
    case CpuIsa::Baseline:
      break;
  }
  isa_baseline::softmax_cols(x, y, outer, n, inner, log);
}
void softmax_cols(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  softmax_cols_isa(x, y, outer, n, inner, log);
}
void softmax_cols(const double* x, double* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  softmax_cols_isa(x, y, outer, n, inner, log);
}

template <class T>
static void layer_norm_rows_isa(const T* x, const T* w, const T* b, T* y, int64_t m, int64_t n,
                                double eps) {
  switch (active_isa()) {
    case CpuIsa::Avx512:
      return isa_avx512::layer_norm_rows(x, w, b, y, m, n, eps);
    case CpuIsa::Avx2:
      return isa_avx2::layer_norm_rows(x, w, b, y, m, n, eps);
    case CpuIsa::Baseline:
      break;
  }
  isa_baseline::layer_norm_rows(x, w, b, y, m, n, eps);
}
void layer_norm_rows(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t n,
                     double eps) {
  layer_norm_rows_isa(x, w, b, y, m, n, eps);
}
void layer_norm_rows(const double* x, const double* w, const double* b, double* y, int64_t m,
                     int64_t n, double eps) {
  layer_norm_rows_isa(x, w, b, y, m, n, eps);
}

template <class T>
static double cross_entropy_total_isa(const T* x, const int64_t* t, int64_t m, int64_t n,
                                      int64_t ignore) {
  switch (active_isa()) {
    case CpuIsa::Avx512:
      return isa_avx512::cross_entropy_total(x, t, m, n, ignore);
    case CpuIsa::Avx2:
      return isa_avx2::cross_entropy_total(x, t, m, n, ignore);
    case CpuIsa::Baseline:
      break;
  }
  return isa_baseline::cross_entropy_total(x, t, m, n, ignore);
}
double cross_entropy_total(const float* x, const int64_t* t, int64_t m, int64_t n, int64_t ignore) {
  return cross_entropy_total_isa(x, t, m, n, ignore);
}
double cross_entropy_total(const double* x, const int64_t* t, int64_t m, int64_t n,
                           int64_t ignore) {
  return cross_entropy_total_isa(x, t, m, n, ignore);
}

}  // namespace kiln
