// The CUDA backend's kernels without a GPU: every pointwise op (and cast, copy, fill) for every
// dtype it accepts becomes a single-op loop kernel (jit/cuda/op_kernel.h), is rendered to CUDA
// C++ (jit/cuda/render.h) and compiled by NVRTC to a CUBIN for sm_90, which must contain it. An
// op the backend cannot run raises a kiln::Error naming it. Skips when libnvrtc is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cuda_device_util.h"
#include "cuda_test_util.h"
#include "expect_error.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/op_kernel.h"
#include "jit/cuda/render.h"
#include "kiln/kiln.h"
#include "ops/pointwise.h"
#include "runtime/dispatcher.h"

namespace kiln {
namespace {

using testing::kAll;

using jit::LoopKernel;
using jit::cuda::op_loop_kernel;
using jit::cuda::render_cuda_kernel;

Tensor sample(DType d) { return ones({2, 3}, TensorOptions().dtype(d)); }

// The kernel of one call, or nothing when the op's meta refuses these inputs (as eager would).
struct Built {
  std::string label;
  LoopKernel kernel;
};

void add_call(std::vector<Built>& out, OpId id, std::vector<Tensor> in, Attrs attrs,
              const std::string& label) {
  const OpCall call{id, in, attrs};
  OutputMeta meta;
  try {
    op_def(id).meta(call, meta);
  } catch (const Error&) {
    return;  // eager refuses it too
  }
  out.push_back({label, op_loop_kernel(call, meta.dtype, Device::cpu())});
}

std::vector<Built> every_kernel() {
  std::vector<Built> all;
  constexpr OpId unary[] = {
      OpId::Neg,   OpId::Abs,      OpId::Exp,     OpId::Log,        OpId::Log1p,
      OpId::Expm1, OpId::Sqrt,     OpId::Rsqrt,   OpId::Reciprocal, OpId::Sin,
      OpId::Cos,   OpId::Tanh,     OpId::Sigmoid, OpId::Relu,       OpId::Silu,
      OpId::Erf,   OpId::Floor,    OpId::Ceil,    OpId::Round,      OpId::Sign,
      OpId::Gelu,  OpId::GeluTanh, OpId::Isnan,   OpId::LogicalNot, OpId::Square};
  constexpr OpId binary[] = {
      OpId::Add, OpId::Sub, OpId::Mul, OpId::Div, OpId::Maximum, OpId::Minimum,    OpId::Eq,
      OpId::Ne,  OpId::Lt,  OpId::Le,  OpId::Gt,  OpId::Ge,      OpId::LogicalAnd, OpId::LogicalOr};
  for (DType d : kAll) {
    const std::string dn(dtype_name(d));
    for (OpId id : unary) add_call(all, id, {sample(d)}, Attrs{}, op_name(id) + (" " + dn));
    for (OpId id : binary) {
      add_call(all, id, {sample(d), sample(d)}, Attrs{}, op_name(id) + (" " + dn));
      Attrs right;  // a Scalar operand on either side: a kernel param
      right.ints[0] = kScalarRight;
      right.scalars[0] = Scalar(2.5);
      add_call(all, id, {sample(d)}, right, op_name(id) + (" scalar " + dn));
      Attrs left;
      left.ints[0] = kScalarLeft;
      left.scalars[0] = d == DType::Bool ? Scalar(true) : Scalar(int64_t{3});
      add_call(all, id, {sample(d)}, left, op_name(id) + (" scalar-left " + dn));
    }
    Attrs clamp;
    clamp.scalars = {Scalar(int64_t{0}), Scalar(int64_t{1})};
    add_call(all, OpId::Clamp, {sample(d)}, clamp, "clamp " + dn);
    for (double e : {2.0, 0.5, 1.0}) {
      Attrs pow;
      pow.scalars[0] = Scalar(e);
      add_call(all, OpId::PowScalar, {sample(d)}, pow, fmt::format("pow {} {}", e, dn));
    }
    add_call(all, OpId::Where, {sample(DType::Bool), sample(d), sample(d)}, Attrs{}, "where " + dn);
    Attrs fill;
    fill.scalars[0] = Scalar(int64_t{1});
    add_call(all, OpId::MaskedFill, {sample(d), sample(DType::Bool)}, fill, "masked_fill " + dn);
    fill.dims = {2, 3};
    fill.dtype = d;
    add_call(all, OpId::Fill, {}, fill, "full " + dn);
    add_call(all, OpId::Copy, {sample(d)}, Attrs{}, "copy " + dn);
    for (DType to : kAll) {
      Attrs cast;
      cast.dtype = to;
      if (to != d)
        add_call(all, OpId::Cast, {sample(d)}, cast,
                 "cast " + dn + " to " + std::string(dtype_name(to)));
    }
  }
  // Promotion across dtypes: the kernel casts operands to the compute dtype.
  add_call(all, OpId::Add, {sample(DType::Int32), sample(DType::Float64)}, Attrs{},
           "add Int32 Float64");
  add_call(all, OpId::Lt, {sample(DType::Int64), sample(DType::Float32)}, Attrs{},
           "lt Int64 Float32");
  add_call(all, OpId::Where, {sample(DType::Bool), sample(DType::Int32), sample(DType::Float32)},
           Attrs{}, "where Int32 Float32");
  return all;
}

TEST(CudaRender, EveryPointwiseOpAndDtypeCompilesForSm90) {
  KILN_CUDA_CODEGEN_TEST_ONCE();
  KILN_SKIP_WITHOUT_NVRTC();
  const std::vector<Built> all = every_kernel();
  // Every op is covered for every dtype its meta accepts (the list above would silently shrink
  // if the meta functions started refusing dtypes).
  EXPECT_GE(all.size(), 390u);
  std::vector<std::string> sources, names, labels;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto r = render_cuda_kernel(all[i].kernel, fmt::format("kiln_test_{}", i));
    sources.push_back(r.source);
    names.push_back(r.name);
    labels.push_back(all[i].label);
  }
  testing::expect_all_compile_for_sm90(sources, names, labels, "every_pointwise_op");
}

TEST(CudaRender, KernelsShareScalarValuesThroughParams) {
  Attrs a;
  a.ints[0] = kScalarRight;
  a.scalars[0] = Scalar(0.5);
  const Tensor x[] = {sample(DType::Float32)};
  const LoopKernel k1 = op_loop_kernel(OpCall{OpId::Mul, x, a}, DType::Float32, Device::cpu());
  a.scalars[0] = Scalar(0.25);
  const LoopKernel k2 = op_loop_kernel(OpCall{OpId::Mul, x, a}, DType::Float32, Device::cpu());
  EXPECT_EQ(k1, k2);  // one compiled kernel for x * 0.5 and x * 0.25
  ASSERT_EQ(k1.num_params(), 1);
  EXPECT_EQ(k1.params[0], DType::Float32);
}

TEST(CudaRender, SourceIsHeaderFreeAndStatesTheKernel) {
  const Tensor x[] = {sample(DType::Int32), sample(DType::Float64)};
  const LoopKernel k = op_loop_kernel(OpCall{OpId::Add, x, Attrs{}}, DType::Float64, Device::cpu());
  const auto r = render_cuda_kernel(k, "kiln_add");
  EXPECT_NE(r.source.find("extern \"C\" __global__ void __launch_bounds__(256) kiln_add("),
            std::string::npos)
      << r.source;
  EXPECT_NE(r.source.find("Cast %0 : Float64"), std::string::npos) << r.source;  // the IR text
  EXPECT_NE(r.source.find("(double)v0"), std::string::npos) << r.source;
}

// General pow (a tensor exponent, or an exponent other than 2, 0.5 and 1) is one Pow expression,
// rendered with CUDA's pow for floats and with int_pow's squaring (kiln_ipow) for integers.
TEST(CudaRender, GeneralPowRendersAsOneExpression) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
    const Tensor x[] = {sample(d), sample(d)};
    const LoopKernel k = op_loop_kernel(OpCall{OpId::Pow, x, Attrs{}}, d, Device::cpu());
    EXPECT_NE(jit::to_text(k).find("Pow"), std::string::npos) << jit::to_text(k);
    const std::string src = render_cuda_kernel(k, "pow_kernel").source;
    const char* want = d == DType::Float32 ? "powf(" : is_floating(d) ? "pow(" : "kiln_ipow(";
    EXPECT_NE(src.find(want), std::string::npos) << src;
  }
  Attrs e;
  e.scalars[0] = Scalar(3.0);
  const Tensor y[] = {sample(DType::Float32)};
  const LoopKernel k = op_loop_kernel(OpCall{OpId::PowScalar, y, e}, DType::Float32, Device::cpu());
  EXPECT_NE(jit::to_text(k).find("Pow"), std::string::npos) << jit::to_text(k);
}

TEST(CudaRender, NoGpuErrorsNameTheOpAndTheReason) {
  if (cuda_is_available()) GTEST_SKIP() << "a GPU is present";
  testing::expect_error([] { zeros({2}, TensorOptions().device(Device::cuda())); },
                        "zeros: device cuda:0 is not available", cuda_unavailable_reason());
  testing::expect_error([] { ones({2}).to(Device::cuda()); }, "to: device cuda:0",
                        cuda_unavailable_reason());
  testing::expect_error(
      [] {
        from_vector<float>({1, 2}, {2}, TensorOptions().device(Device::cuda(1)));
      },
      "from_vector: device cuda:1 is not available");
}

}  // namespace
}  // namespace kiln
