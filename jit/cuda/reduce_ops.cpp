#include "jit/cuda/reduce_ops.h"

#include <limits>
#include <memory>
#include <span>
#include <string>

#include "jit/cuda/cuda_target.h"
#include "jit/lower/lower_reduce.h"
#include "ops/meta_helpers.h"
#include "ops/reduce.h"
#include "runtime/device_copy.h"
#include "runtime/error.h"
#include "tracer/graph.h"

namespace kiln::jit::cuda {

namespace {

constexpr DType F32 = DType::Float32, F64 = DType::Float64, I32 = DType::Int32, I64 = DType::Int64;

// x != 0 as a mask (NaN counts as nonzero, as in eager's all/any).
int32_t nonzero(LoopKernel& k, int32_t x) {
  const DType t = k.exprs[x].type;
  if (t == DType::Bool) return x;
  const int32_t zero = is_floating(t) ? k.constant(0.0, t) : k.constant_int(0, t);
  return k.binary(ExprOp::Ne, x, zero);
}

// sum prod mean amax amin var logsumexp all any of input 0, giving `out`.
LoopKernel reduction_kernel(const OpCall& c, DType out) {
  const DType in = c.inputs[0].impl()->dtype();
  LoopKernel k;
  k.inputs = {in};
  const int32_t x = k.load(0);
  int32_t r = -1;
  switch (c.op) {
    case OpId::Sum:
    case OpId::Prod:
    case OpId::Mean:
    case OpId::Amax:
    case OpId::Amin:
    case OpId::Var:
      if (is_floating(in)) {  // the CPU JIT's lowering (eager's formulas: mean = sum / n, ...)
        tracer::Node n;
        n.op = c.op;
        n.attrs = c.attrs;
        r = lower_reduction(k, n, x);
      } else if (c.op == OpId::Sum || c.op == OpId::Prod) {  // Int64, wrapping
        r = k.reduce(c.op == OpId::Sum ? ExprOp::ReduceSum : ExprOp::ReduceProd, k.as_type(x, I64));
      } else if (c.op == OpId::Amax || c.op == OpId::Amin) {
        const ExprOp op = c.op == OpId::Amax ? ExprOp::ReduceMax : ExprOp::ReduceMin;
        r = in == DType::Bool ? k.cast(k.reduce(op, k.cast(x, I32)), DType::Bool) : k.reduce(op, x);
      }
      break;
    case OpId::Logsumexp: {  // eager: m + log(sum(exp(x - m))), m = 0 where the max is infinite
      const int32_t xc = k.as_type(x, out);
      const int32_t m = k.reduce(ExprOp::ReduceMax, xc);
      const int32_t inf = k.constant(std::numeric_limits<double>::infinity(), out);
      const int32_t shift =
          k.select(k.binary(ExprOp::Eq, k.unary(ExprOp::Abs, m), inf), k.constant(0.0, out), m);
      const int32_t s =
          k.reduce(ExprOp::ReduceSum, k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, xc, shift)));
      r = k.binary(ExprOp::Add, k.unary(ExprOp::Log, s), shift);
      break;
    }
    case OpId::All:
    case OpId::Any: {  // max (any) or min (all) of x != 0 as 0 or 1; an empty row: -inf or +inf
      const int32_t f = k.select(nonzero(k, x), k.constant(1.0, F32), k.constant(0.0, F32));
      const int32_t m = k.reduce(c.op == OpId::Any ? ExprOp::ReduceMax : ExprOp::ReduceMin, f);
      r = k.binary(ExprOp::Gt, m, k.constant(0.5, F32));
      break;
    }
    default:
      break;
  }
  KILN_CHECK(r >= 0 && k.exprs[r].type == out, "{}: no CUDA kernel for {} giving {}", op_name(c.op),
             in, out);
  k.stores = {r};
  k.verify();
  return k;
}

// argmax/argmin along one dim: the first index of the row's extreme, or of its first NaN, as the
// CPU's arg_range (ops/cpu/reduce_loops.h). Input 1 holds the row's indices 0..n-1 (the IR has no
// element index): the second pass takes the least index where x equals the extreme (+0 and -0
// alike), an associative choice, so any combining order gives the CPU's answer.
LoopKernel arg_kernel(DType in, bool max) {
  LoopKernel k;
  k.inputs = {in, I64};
  const int32_t x = k.load(0), index = k.load(1);
  const int32_t m = k.reduce(max ? ExprOp::ReduceMax : ExprOp::ReduceMin, x);
  int32_t hit = k.binary(ExprOp::Eq, x, m);
  if (is_floating(in))
    hit = k.binary(ExprOp::Or, hit,
                   k.binary(ExprOp::And, k.binary(ExprOp::Ne, m, m), k.binary(ExprOp::Ne, x, x)));
  const int32_t none = k.constant_int(std::numeric_limits<int64_t>::max(), I64);
  k.stores = {k.reduce(ExprOp::ReduceMin, k.select(hit, index, none))};
  k.verify();
  return k;
}

// softmax: exp(x - max) * (1 / sum), log_softmax: x - (max + log(sum)), as ops/softmax.cpp.
LoopKernel softmax_kernel(DType in, DType out, bool log) {
  LoopKernel k;
  k.inputs = {in};
  const int32_t x = k.as_type(k.load(0), out);
  const int32_t m = k.reduce(ExprOp::ReduceMax, x);
  const int32_t e = k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, m));
  const int32_t s = k.reduce(ExprOp::ReduceSum, e);
  if (log) {
    k.stores = {k.binary(ExprOp::Sub, x, k.binary(ExprOp::Add, m, k.unary(ExprOp::Log, s)))};
  } else {
    const int32_t inv = k.binary(ExprOp::Div, k.constant(1.0, out), s);
    k.stores = {k.binary(ExprOp::Mul, e, inv)};
  }
  k.verify();
  return k;
}

// ops/layer_norm.cpp in t: mean, then the sum of squared deviations, then
// (x - mean) * (1 / sqrt(ss / D + eps)) [* w] [+ b]. Param 0 is eps (converted to t).
LoopKernel layer_norm_kernel(DType t, bool has_w, bool has_b) {
  LoopKernel k;
  k.inputs.assign(1 + has_w + has_b, t);
  k.params = {t};
  const int32_t x = k.load(0);
  const int32_t mean = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(t));
  const int32_t d = k.binary(ExprOp::Sub, x, mean);
  const int32_t ss = k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, d, d));
  const int32_t var_eps =
      k.binary(ExprOp::Add, k.binary(ExprOp::Div, ss, k.row_size(t)), k.param(0));
  const int32_t rstd = k.binary(ExprOp::Div, k.constant(1.0, t), k.unary(ExprOp::Sqrt, var_eps));
  int32_t v = k.binary(ExprOp::Mul, d, rstd);
  if (has_w) v = k.binary(ExprOp::Mul, v, k.load(1));
  if (has_b) v = k.binary(ExprOp::Add, v, k.load(has_w ? 2 : 1));
  k.stores = {v};
  k.verify();
  return k;
}

// cross_entropy's rows: inputs logits (t), target (Int64, the row's, broadcast along it) and
// the class indices 0..C-1 (Int64); param 0 the ignore index. Stores the row's loss in Float64,
// lse - x[target] with lse = max + log(sum(exp(x - max))) in t, as ops/losses.cpp, or 0 for an
// ignored row.
LoopKernel cross_entropy_rows_kernel(DType t) {
  LoopKernel k;
  k.inputs = {t, I64, I64};
  k.params = {I64};
  const int32_t x = k.load(0);
  const int32_t target = k.load(1), cls = k.load(2);
  const int32_t zero = k.constant(0.0, F64), one = k.constant(1.0, F64);
  const int32_t mx = k.reduce(ExprOp::ReduceMax, x);
  const int32_t s = k.reduce(ExprOp::ReduceSum, k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, mx)));
  const int32_t lse = k.as_type(k.binary(ExprOp::Add, mx, k.unary(ExprOp::Log, s)), F64);
  const int32_t picked =
      k.as_type(k.reduce(ExprOp::ReduceSum,
                         k.select(k.binary(ExprOp::Eq, cls, target), x, k.constant(0.0, t))),
                F64);
  // 1 when the row's target is the ignore index (every element of the row agrees).
  const int32_t ignored =
      k.reduce(ExprOp::ReduceMax, k.select(k.binary(ExprOp::Eq, target, k.param(0)), one, zero));
  const int32_t loss = k.binary(ExprOp::Sub, lse, picked);
  k.stores = {k.select(k.binary(ExprOp::Gt, ignored, k.constant(0.5, F64)), zero, loss)};
  k.verify();
  return k;
}

// The mean of the row losses: their sum / param 0 (the counted rows), in t.
LoopKernel cross_entropy_mean_kernel(DType t) {
  LoopKernel k;
  k.inputs = {F64};
  k.params = {F64};
  const int32_t mean = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, k.load(0)), k.param(0));
  k.stores = {k.as_type(mean, t)};
  k.verify();
  return k;
}

std::shared_ptr<CompiledKernel> compiled(const OpCall& c, KernelTarget& target, Device device,
                                         const LoopKernel& k) {
  const std::string name = op_name(c.op);
  try {
    return target.compile(k);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.starts_with(name + ":")) throw;
    fail("{}: no CUDA kernel for {}: {}", name, device, what);
  }
}

// The index space of a row op over input `x`: its kept dims in order, then the reduced ones.
struct RowSpace {
  DimVector sizes;
  DimVector order;  // the input dim of each index dim
  int reduced = 0;
};

RowSpace row_space(const TensorImpl* x, uint64_t mask) {
  RowSpace s;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t d = 0; d < x->dim(); ++d)
      if (((mask >> d) & 1u) == static_cast<uint64_t>(pass)) {
        s.sizes.push_back(x->sizes()[d]);
        s.order.push_back(d);
        s.reduced += pass;
      }
  return s;
}

// Byte strides of `t` (of the input's shape) over the index space.
DimVector space_strides(const TensorImpl* t, const RowSpace& s) {
  const int64_t item = static_cast<int64_t>(itemsize(t->dtype()));
  DimVector out;
  for (int64_t d : s.order) out.push_back(t->strides()[d] * item);
  return out;
}

// Byte strides of a reduction's output over the index space (0 along the row).
DimVector reduced_strides(const TensorImpl* out, const TensorImpl* x, uint64_t mask, bool keepdim,
                          const RowSpace& s) {
  DimVector out_dim(static_cast<size_t>(x->dim()), -1);
  int64_t od = 0;
  for (int64_t d = 0; d < x->dim(); ++d) {
    if (!((mask >> d) & 1u))
      out_dim[d] = od++;
    else if (keepdim)
      ++od;
  }
  const int64_t item = static_cast<int64_t>(itemsize(out->dtype()));
  DimVector strides;
  for (int64_t d : s.order)
    strides.push_back(out_dim[d] < 0 ? 0 : out->strides()[out_dim[d]] * item);
  return strides;
}

// Byte strides of `t` broadcast (right-aligned) to `sizes`.
DimVector broadcast_strides(const TensorImpl* t, const DimVector& sizes) {
  const int64_t rank = static_cast<int64_t>(sizes.size()), lead = rank - t->dim();
  const int64_t item = static_cast<int64_t>(itemsize(t->dtype()));
  DimVector s(static_cast<size_t>(rank), 0);
  for (int64_t d = lead; d < rank; ++d)
    s[d] = t->sizes()[d - lead] == 1 && sizes[d] != 1 ? 0 : t->strides()[d - lead] * item;
  return s;
}

void launch(CompiledKernel& kernel, const RowSpace& s, const std::vector<const void*>& ptrs,
            std::vector<DimVector> strides, std::span<const Scalar> params = {}) {
  LaunchArgs a;
  a.sizes = s.sizes;
  a.reduced_dims = s.reduced;
  for (const void* p : ptrs) a.ptrs.push_back(static_cast<char*>(const_cast<void*>(p)));
  a.strides = std::move(strides);
  a.params = params;
  kernel.launch(a);
}

void run_reduction(const OpCall& c, const Tensor& out, KernelTarget& target) {
  const TensorImpl* x = c.inputs[0].impl();
  const TensorImpl* o = out.impl();
  const uint64_t mask = reduced_mask(c);
  const bool keepdim = c.attrs.ints[0] != 0;
  auto kernel = compiled(c, target, o->device(), reduction_kernel(c, o->dtype()));
  const RowSpace s = row_space(x, mask);
  launch(*kernel, s, {o->data(), x->data()},
         {reduced_strides(o, x, mask, keepdim, s), space_strides(x, s)});
}

// A device tensor of 0..n-1 (Int64), the row's indices for arg_kernel and cross_entropy.
Tensor indices(int64_t n, Device dev) {
  std::vector<int64_t> iota(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) iota[i] = i;
  Tensor t = empty_tensor({n}, I64, dev);
  copy_bytes(dev, t.impl()->data(), Device::cpu(), iota.data(), iota.size() * sizeof(int64_t));
  return t;
}

void run_arg(const OpCall& c, const Tensor& out, KernelTarget& target) {
  const TensorImpl* x = c.inputs[0].impl();
  const TensorImpl* o = out.impl();
  const int64_t dim = wrap_dim(op_name(c.op), c.attrs.dims[0], x->dim());
  const uint64_t mask = x->dim() == 0 ? 0 : uint64_t{1} << dim;
  const bool keepdim = c.attrs.ints[0] != 0;
  auto kernel = compiled(c, target, o->device(), arg_kernel(x->dtype(), c.op == OpId::Argmax));
  const RowSpace s = row_space(x, mask);
  if (o->numel() == 0) return;
  const Tensor index = indices(x->dim() == 0 ? 1 : x->sizes()[dim], o->device());
  DimVector index_strides(s.sizes.size(), 0);
  if (s.reduced > 0) index_strides.back() = 8;
  launch(*kernel, s, {o->data(), x->data(), index.impl()->data()},
         {reduced_strides(o, x, mask, keepdim, s), space_strides(x, s), index_strides});
}

void run_softmax(const OpCall& c, const Tensor& out, KernelTarget& target) {
  const TensorImpl* x = c.inputs[0].impl();
  const TensorImpl* o = out.impl();
  const bool log = c.op == OpId::LogSoftmax;
  const int64_t dim = wrap_dim(log ? "log_softmax" : "softmax", c.attrs.ints[0], x->dim());
  const uint64_t mask = x->dim() == 0 ? 0 : uint64_t{1} << dim;
  auto kernel = compiled(c, target, o->device(), softmax_kernel(x->dtype(), o->dtype(), log));
  const RowSpace s = row_space(x, mask);
  launch(*kernel, s, {o->data(), x->data()}, {space_strides(o, s), space_strides(x, s)});
}

void run_layer_norm(const OpCall& c, const Tensor& out, KernelTarget& target) {
  const TensorImpl* x = c.inputs[0].impl();
  const TensorImpl* o = out.impl();
  const bool has_w = c.attrs.ints[0] != 0, has_b = c.attrs.ints[1] != 0;
  const int64_t nd = static_cast<int64_t>(c.attrs.dims.size());
  uint64_t mask = 0;
  for (int64_t d = x->dim() - nd; d < x->dim(); ++d) mask |= uint64_t{1} << d;
  auto kernel = compiled(c, target, o->device(), layer_norm_kernel(x->dtype(), has_w, has_b));
  const RowSpace s = row_space(x, mask);  // the dims in order: the row is the trailing ones
  std::vector<DimVector> strides = {space_strides(o, s), space_strides(x, s)};
  std::vector<const void*> ptrs = {o->data(), x->data()};
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    strides.push_back(broadcast_strides(c.inputs[i].impl(), s.sizes));
    ptrs.push_back(c.inputs[i].impl()->data());
  }
  launch(*kernel, s, ptrs, std::move(strides),
         std::span<const Scalar>(c.attrs.scalars.data(), 1));  // eps
}

// The targets on the host, checked as the CPU kernel checks them; returns the counted rows.
int64_t check_targets(const TensorImpl* t, int64_t n, int64_t classes, int64_t ignore) {
  if (n == 0) return 0;
  const int64_t step = t->dim() == 0 ? 0 : t->strides()[0];
  KILN_CHECK(step >= 0, "cross_entropy: a target with a negative stride");
  std::vector<int64_t> host(static_cast<size_t>((n - 1) * step + 1));
  copy_bytes(Device::cpu(), host.data(), t->device(), t->data(), host.size() * sizeof(int64_t));
  int64_t counted = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = host[i * step];
    if (v == ignore) continue;
    KILN_CHECK(v >= 0 && v < classes,
               "cross_entropy: target {} at position {} is out of range for {} classes", v, i,
               classes);
    ++counted;
  }
  return counted;
}

void run_cross_entropy(const OpCall& c, const Tensor& out, KernelTarget& target) {
  const TensorImpl* l = c.inputs[0].impl();
  const TensorImpl* t = c.inputs[1].impl();
  const TensorImpl* o = out.impl();
  const Device dev = o->device();
  const int64_t N = l->dim() == 2 ? l->sizes()[0] : 1;
  const int64_t C = l->sizes()[l->dim() - 1];
  const int64_t ignore = c.attrs.ints[0];
  const int64_t counted = check_targets(t, N, C, ignore);
  const std::vector<LoopKernel> ks = row_op_kernels(c, o->dtype());
  // Row losses: [N] in Float64 (an ignored row, and every row of C == 0 classes, is 0).
  const Tensor losses = empty_tensor({N}, F64, dev);
  RowSpace rows;
  rows.sizes = {N, C};
  rows.order = {0, 1};
  rows.reduced = 1;
  if (N > 0 && C > 0) {
    const Tensor cls = indices(C, dev);
    const int64_t lstride0 = l->dim() == 2 ? l->strides()[0] : 0;
    const int64_t item = static_cast<int64_t>(itemsize(l->dtype()));
    const int64_t tstride = t->dim() == 0 ? 0 : t->strides()[0] * 8;
    const Scalar ignore_param(ignore);
    launch(*compiled(c, target, dev, ks[0]), rows,
           {losses.impl()->data(), l->data(), t->data(), cls.impl()->data()},
           {{8, 0}, {lstride0 * item, l->strides()[l->dim() - 1] * item}, {tstride, 0}, {0, 8}},
           std::span<const Scalar>(&ignore_param, 1));
  } else if (N > 0) {
    const Scalar zero(0.0);
    LoopKernel fill;
    fill.params = {F64};
    fill.stores = {fill.param(0)};
    LaunchArgs a;
    a.sizes = {N};
    a.ptrs.push_back(static_cast<char*>(losses.impl()->data()));
    a.strides = {{8}};
    a.params = std::span<const Scalar>(&zero, 1);
    compiled(c, target, dev, fill)->launch(a);
  }
  // Their mean: the sum of all N (ignored ones are 0) over the counted ones (0/0 = NaN).
  RowSpace all;
  all.sizes = {N};
  all.order = {0};
  all.reduced = 1;
  const Scalar count(static_cast<double>(counted));
  launch(*compiled(c, target, dev, ks[1]), all, {o->data(), losses.impl()->data()}, {{0}, {8}},
         std::span<const Scalar>(&count, 1));
}

}  // namespace

std::vector<LoopKernel> row_op_kernels(const OpCall& c, DType out) {
  switch (c.op) {
    case OpId::Softmax:
    case OpId::LogSoftmax:
      return {softmax_kernel(c.inputs[0].impl()->dtype(), out, c.op == OpId::LogSoftmax)};
    case OpId::LayerNorm:
      return {layer_norm_kernel(out, c.attrs.ints[0] != 0, c.attrs.ints[1] != 0)};
    case OpId::CrossEntropy:
      return {cross_entropy_rows_kernel(out), cross_entropy_mean_kernel(out)};
    case OpId::Argmax:
    case OpId::Argmin:
      return {arg_kernel(c.inputs[0].impl()->dtype(), c.op == OpId::Argmax)};
    default:
      return {reduction_kernel(c, out)};
  }
}

void run_cuda_row_op(const OpCall& c, const Tensor& out, KernelTarget& target) {
  switch (c.op) {
    case OpId::Softmax:
    case OpId::LogSoftmax:
      return run_softmax(c, out, target);
    case OpId::LayerNorm:
      return run_layer_norm(c, out, target);
    case OpId::CrossEntropy:
      return run_cross_entropy(c, out, target);
    case OpId::Argmax:
    case OpId::Argmin:
      return run_arg(c, out, target);
    default:
      return run_reduction(c, out, target);
  }
}

void register_cuda_reduce_kernels() {
  constexpr OpId ops[] = {OpId::Sum,          OpId::Mean,      OpId::Prod,       OpId::Amax,
                          OpId::Amin,         OpId::Logsumexp, OpId::Var,        OpId::All,
                          OpId::Any,          OpId::Softmax,   OpId::LogSoftmax, OpId::LayerNorm,
                          OpId::CrossEntropy, OpId::Argmax,    OpId::Argmin};
  for (OpId id : ops)
    register_device_kernel(id, Device::Type::CUDA, [](const OpCall& c, const Tensor& out) {
      run_cuda_row_op(c, out, cuda_target(out.impl()->device().index));
    });
}

}  // namespace kiln::jit::cuda
