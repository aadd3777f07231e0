#include "jit/cuda/op_kernel.h"

#include <vector>

#include "jit/cuda/cuda_target.h"
#include "jit/lower/lowering.h"
#include "ops/pointwise.h"
#include "runtime/error.h"
#include "tracer/graph.h"

namespace kiln::jit::cuda {

namespace {

// lowers() asks a target what it renders; this answers for the CUDA renderer without a device
// (CI has none) and compiles through the device's own target.
class CudaRenderSupport final : public KernelTarget {
 public:
  explicit CudaRenderSupport(Device d) : device_(d) {}
  const char* name() const override { return "cuda"; }
  int threshold() const override { return 1; }
  bool supports(ExprOp op, DType dtype) const override { return cuda_renders(op, dtype); }
  std::shared_ptr<CompiledKernel> compile(const LoopKernel& k) override {
    return cuda_target(device_.index).compile(k);
  }

 private:
  Device device_;
};

// A Scalar param read as `t`; a Bool value goes through Float64 (params are numbers), which
// keeps Scalar::to<bool>'s "not zero" (NaN included).
int32_t scalar_param(LoopKernel& k, int32_t p, DType t) {
  k.params[p] = t == DType::Bool ? DType::Float64 : t;
  return k.as_type(k.param(p), t);
}

}  // namespace

bool cuda_renders(ExprOp op, DType dtype) {
  if (op == ExprOp::Cast) return true;
  if (expr_is_compare(op)) return dtype != DType::Bool;
  return expr_accepts(op, dtype);
}

LoopKernel op_loop_kernel(const OpCall& c, DType out, Device device) {
  LoopKernel k;
  if (c.op == OpId::Fill) {
    k.params.resize(1);
    k.stores = {scalar_param(k, 0, out)};
    k.verify();
    return k;
  }
  for (const Tensor& t : c.inputs) k.inputs.push_back(t.impl()->dtype());
  std::vector<int32_t> in;
  for (int32_t i = 0; i < k.num_inputs(); ++i) in.push_back(k.load(i));
  if (c.op == OpId::Copy || c.op == OpId::Cast) {
    k.stores = {k.as_type(in.at(0), out)};
    k.verify();
    return k;
  }

  tracer::Node n;
  n.op = c.op;
  n.attrs = c.attrs;
  n.meta.dtype = out;
  n.meta.device = device;
  std::vector<tracer::ValueMeta> metas;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    n.inputs.push_back(static_cast<tracer::ValueId>(i));
    metas.push_back(tracer::meta_of(c.inputs[i].impl()));
  }
  std::vector<const tracer::ValueMeta*> meta_ptrs;
  for (const tracer::ValueMeta& m : metas) meta_ptrs.push_back(&m);
  // Scalars become params, except pow's exponent (the eager kernel special-cases 2, 0.5 and 1,
  // and the lowering needs the value to do the same) and the logical ops' (a Bool, which a
  // param cannot be: two kernels, for true and false).
  ScalarSource s;
  const bool logical = c.op == OpId::LogicalAnd || c.op == OpId::LogicalOr;
  const bool scalar_operand =
      c.op == OpId::MaskedFill || (c.inputs.size() == 1 && scalar_side(c.attrs) != kNoScalar &&
                                   c.op != OpId::Clamp && c.op != OpId::PowScalar && !logical);
  int np = 0;
  if (c.op == OpId::Clamp) {
    s.param[0] = 0;
    s.param[1] = 1;
    np = 2;
  } else if (scalar_operand) {
    s.param[0] = 0;
    np = 1;
  }
  k.params.assign(static_cast<size_t>(np), DType::Float32);

  // Ops computing in Bool go through Int32 in the lowering itself (lowering.cpp
  // computes_via_int), as in fused kernels.
  int32_t result = -1;
  if (lowers(n, meta_ptrs, s, CudaRenderSupport(device), device))
    result = lower_node(k, n, meta_ptrs, in, s);
  std::string dtypes;
  for (const Tensor& t : c.inputs)
    dtypes += fmt::format("{}{}", dtypes.empty() ? "" : ", ", t.impl()->dtype());
  KILN_CHECK(result >= 0,
             "{}: not implemented for CUDA tensors of {} giving {} (no loop kernel for it)",
             op_name(c.op), dtypes, out);
  KILN_CHECK(k.exprs[result].type == out, "{}: the CUDA kernel computes {} but the result is {}",
             op_name(c.op), k.exprs[result].type, out);
  k.stores = {result};
  k.verify();
  return k;
}

}  // namespace kiln::jit::cuda
