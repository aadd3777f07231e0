#include "jit/cuda/eager_ops.h"

#include <fmt/format.h>

#include "jit/cuda/blas_ops.h"
#include "jit/cuda/cuda_target.h"
#include "jit/cuda/factory_ops.h"
#include "jit/cuda/index_ops.h"
#include "jit/cuda/loop_launch.h"
#include "jit/cuda/op_kernel.h"
#include "jit/cuda/random_ops.h"
#include "jit/cuda/reduce_ops.h"
#include "runtime/device_copy.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

// A copy between dense tensors of one dtype that do not overlap is the driver's memcpy (as in
// PyTorch): the bandwidth ceiling kiln-perf measures, which a kernel does not quite reach.
bool copy_as_memcpy(const OpCall& c, const TensorImpl* o) {
  if (c.op != OpId::Copy || c.inputs.size() != 1) return false;
  const TensorImpl* x = c.inputs[0].impl();
  if (x->dtype() != o->dtype() || x->sizes() != o->sizes() || !x->is_contiguous() ||
      !o->is_contiguous() || x->device() != o->device())
    return false;
  const size_t bytes = static_cast<size_t>(o->numel()) * itemsize(o->dtype());
  const char* src = static_cast<const char*>(x->data());
  char* dst = static_cast<char*>(o->data());
  if (src < dst + bytes && dst < src + bytes) return false;  // overlapping: the kernel's order
  copy_bytes(o->device(), dst, x->device(), src, bytes);
  return true;
}

void run_on_cuda(const OpCall& c, const Tensor& out) {
  const TensorImpl* o = out.impl();
  const Device device = o->device();
  if (copy_as_memcpy(c, o)) return;
  std::shared_ptr<CompiledKernel> kernel;
  try {
    kernel = cuda_target(device.index).compile(op_loop_kernel(c, o->dtype(), device));
  } catch (const Error& e) {
    const std::string what = e.what();
    const std::string name = op_name(c.op);
    if (what.starts_with(name + ":")) throw;
    fail("{}: no CUDA kernel for {}: {}", name, device, what);
  }
  LaunchArgs a;
  a.sizes = o->sizes();
  a.ptrs.push_back(static_cast<char*>(o->data()));
  a.strides.push_back(cuda_byte_strides(o, a.sizes));
  for (const Tensor& t : c.inputs) {
    const TensorImpl* i = t.impl();
    a.ptrs.push_back(static_cast<char*>(i->data()));
    a.strides.push_back(cuda_byte_strides(i, a.sizes));
  }
  a.params = std::span<const Scalar>(c.attrs.scalars.data(),
                                     static_cast<size_t>(kernel->source().num_params()));
  kernel->launch(a);
}

}  // namespace

void register_cuda_kernels() {
  constexpr OpId ops[] = {
      OpId::Neg,        OpId::Abs,       OpId::Exp,     OpId::Log,        OpId::Log1p,
      OpId::Expm1,      OpId::Sqrt,      OpId::Rsqrt,   OpId::Reciprocal, OpId::Sin,
      OpId::Cos,        OpId::Tanh,      OpId::Sigmoid, OpId::Relu,       OpId::Silu,
      OpId::Erf,        OpId::Floor,     OpId::Ceil,    OpId::Round,      OpId::Sign,
      OpId::Gelu,       OpId::GeluTanh,  OpId::Isnan,   OpId::LogicalNot, OpId::Square,
      OpId::PowScalar,  OpId::Clamp,     OpId::Add,     OpId::Sub,        OpId::Mul,
      OpId::Div,        OpId::Pow,       OpId::Maximum, OpId::Minimum,    OpId::Eq,
      OpId::Ne,         OpId::Lt,        OpId::Le,      OpId::Gt,         OpId::Ge,
      OpId::LogicalAnd, OpId::LogicalOr, OpId::Where,   OpId::MaskedFill, OpId::Copy,
      OpId::Cast,       OpId::Fill};
  for (OpId id : ops) register_device_kernel(id, Device::Type::CUDA, run_on_cuda);
  register_cuda_blas_kernels();  // matmul through cuBLAS (blas_ops.h)
  register_cuda_random_kernels();
  register_cuda_index_kernels();
  register_cuda_factory_kernels();
  register_cuda_reduce_kernels();  // reductions, softmax, layer_norm, cross_entropy
}

}  // namespace kiln::jit::cuda
