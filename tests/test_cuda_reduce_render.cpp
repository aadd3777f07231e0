// The CUDA row kernels without a GPU: every reduction and nn row op (sum, prod, mean, amax,
// amin, var both ways, logsumexp, all, any, softmax, log_softmax, layer_norm with and without
// weight and bias, cross_entropy's two kernels) for every dtype its meta accepts becomes row
// kernels (jit/cuda/reduce_ops.h), rendered to header-free CUDA C++ (render_reduce.h) and compiled
// by NVRTC to a CUBIN for sm_90, which must contain each. Skips when libnvrtc is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cuda_device_util.h"
#include "cuda_test_util.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/reduce_ops.h"
#include "jit/cuda/render.h"
#include "kiln/kiln.h"
#include "runtime/dispatcher.h"

namespace kiln {
namespace {

using testing::kAll;

using jit::LoopKernel;
using jit::cuda::render_cuda_kernel;
using jit::cuda::row_op_kernels;

struct Built {
  std::string label;
  LoopKernel kernel;
};

// The kernels of one call, or nothing when the op's meta refuses these inputs (as eager would).
void add_call(std::vector<Built>& out, OpId id, std::vector<Tensor> in, Attrs attrs,
              const std::string& label) {
  const OpCall call{id, in, attrs};
  OutputMeta meta;
  try {
    op_def(id).meta(call, meta);
  } catch (const Error&) {
    return;
  }
  const std::vector<LoopKernel> ks = row_op_kernels(call, meta.dtype);
  for (size_t i = 0; i < ks.size(); ++i) out.push_back({fmt::format("{} #{}", label, i), ks[i]});
}

std::vector<Built> every_row_kernel() {
  std::vector<Built> all;
  for (DType d : kAll) {
    const std::string dn(dtype_name(d));
    const Tensor x = ones({2, 3}, TensorOptions().dtype(d));
    for (OpId id : {OpId::Sum, OpId::Mean, OpId::Prod, OpId::Amax, OpId::Amin, OpId::Logsumexp,
                    OpId::Var, OpId::All, OpId::Any}) {
      Attrs a;
      a.dims = {1};
      add_call(all, id, {x}, a, fmt::format("{} {}", op_name(id), dn));
      if (id == OpId::Var) {
        a.ints[1] = 1;
        add_call(all, id, {x}, a, "var unbiased " + dn);
      }
    }
    for (OpId id : {OpId::Argmax, OpId::Argmin}) {
      Attrs a;
      a.dims = {1};
      add_call(all, id, {x}, a, fmt::format("{} {}", op_name(id), dn));
    }
    for (OpId id : {OpId::Softmax, OpId::LogSoftmax}) {
      Attrs a;
      a.ints[0] = -1;
      add_call(all, id, {x}, a, fmt::format("{} {}", op_name(id), dn));
    }
    const Tensor w = ones({3}, TensorOptions().dtype(d));
    for (int flags = 0; flags < 4; ++flags) {
      Attrs a;
      a.dims = {3};
      a.scalars[0] = Scalar(1e-5);
      a.ints[0] = flags & 1;
      a.ints[1] = flags >> 1;
      std::vector<Tensor> in = {x};
      if (flags & 1) in.push_back(w);
      if (flags & 2) in.push_back(w);
      add_call(all, OpId::LayerNorm, in, a, fmt::format("layer_norm {} {}", flags, dn));
    }
    Attrs ce;
    ce.ints[0] = -100;
    add_call(all, OpId::CrossEntropy, {x, zeros({2}, TensorOptions().dtype(DType::Int64))}, ce,
             "cross_entropy " + dn);
  }
  return all;
}

TEST(CudaReduceRender, EveryRowOpAndDtypeCompilesForSm90) {
  KILN_CUDA_CODEGEN_TEST_ONCE();
  KILN_SKIP_WITHOUT_NVRTC();
  const std::vector<Built> all = every_row_kernel();
  // 5 dtypes x (sum prod amax amin all any logsumexp softmax log_softmax) + 4 non-Bool dtypes x
  // (argmax, argmin) + 2 float dtypes x (mean, var twice, 4 layer_norms, 2 cross_entropy
  // kernels): the list would silently shrink if the meta functions started refusing dtypes.
  EXPECT_EQ(all.size(), 5u * 9 + 4u * 2 + 2u * 9);
  std::vector<std::string> sources, names, labels;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto r = render_cuda_kernel(all[i].kernel, fmt::format("kiln_row_test_{}", i));
    EXPECT_NE(r.source.find("kiln_warp_tree<"), std::string::npos) << all[i].label;
    sources.push_back(r.source);
    names.push_back(r.name);
    labels.push_back(all[i].label);
  }
  testing::expect_all_compile_for_sm90(sources, names, labels, "every_row_op");
}

// The kernels follow eager's dtype rules and formulas: integer sums accumulate in Int64, Bool
// amax through Int32, logsumexp of integers in Float32, layer_norm in Float64, and the float
// reductions are the CPU JIT's lowering (mean = sum / RowSize; var's two passes).
TEST(CudaReduceRender, KernelsFollowEagerDtypesAndFormulas) {
  auto kernel_of = [](OpId id, DType d, Attrs a = {}) {
    const Tensor x[] = {ones({2, 3}, TensorOptions().dtype(d))};
    const OpCall call{id, x, a};
    OutputMeta meta;
    op_def(id).meta(call, meta);
    return jit::to_text(row_op_kernels(call, meta.dtype).at(0));
  };
  const std::string sum_i32 = kernel_of(OpId::Sum, DType::Int32);
  EXPECT_NE(sum_i32.find("Cast %0 : Int64"), std::string::npos) << sum_i32;
  EXPECT_NE(sum_i32.find("ReduceSum %1 : Int64"), std::string::npos) << sum_i32;
  const std::string amax_b = kernel_of(OpId::Amax, DType::Bool);
  EXPECT_NE(amax_b.find("ReduceMax %1 : Int32"), std::string::npos) << amax_b;
  const std::string lse = kernel_of(OpId::Logsumexp, DType::Int64);
  EXPECT_NE(lse.find("ReduceMax %1 : Float32"), std::string::npos) << lse;
  const std::string mean = kernel_of(OpId::Mean, DType::Float64);
  EXPECT_NE(mean.find("RowSize : Float64"), std::string::npos) << mean;
  Attrs unbiased;
  unbiased.ints[1] = 1;
  const std::string var = kernel_of(OpId::Var, DType::Float32, unbiased);
  EXPECT_NE(var.find("RowSize -1 : Float32"), std::string::npos) << var;
  const std::string any = kernel_of(OpId::Any, DType::Float32);
  EXPECT_NE(any.find("ReduceMax"), std::string::npos) << any;
  EXPECT_NE(kernel_of(OpId::All, DType::Int32).find("ReduceMin"), std::string::npos);
  // The same kernel serves every shape and set of dims: sizes are launch arguments.
  Attrs dims;
  dims.dims = {0};
  dims.ints[0] = 1;
  EXPECT_EQ(kernel_of(OpId::Sum, DType::Float32), kernel_of(OpId::Sum, DType::Float32, dims));
}

TEST(CudaReduceRender, RowKernelSourceStatesItsGeometry) {
  const Tensor x[] = {ones({2, 3})};
  Attrs a;
  a.ints[0] = -1;
  const OpCall call{OpId::Softmax, x, a};
  const auto r = render_cuda_kernel(row_op_kernels(call, DType::Float32).at(0), "kiln_softmax");
  EXPECT_NE(r.source.find("/* kiln row kernel"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("const bool warp = row_n <= 2048;"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("kiln_warp_tree<kiln_rmax<float>, float>"), std::string::npos);
  EXPECT_NE(r.source.find("kiln_warp_tree<kiln_rsum<float>, float>"), std::string::npos);
  EXPECT_NE(r.source.find("expf("), std::string::npos);
}

// argmax/argmin: the extreme, then the least index where x equals it (or is NaN when it is).
TEST(CudaReduceRender, ArgReductionsTakeTheLeastIndexOfTheExtreme) {
  const Tensor x[] = {ones({2, 3})};
  Attrs a;
  a.dims = {1};
  const std::string k =
      jit::to_text(row_op_kernels(OpCall{OpId::Argmax, x, a}, DType::Int64).at(0));
  EXPECT_NE(k.find("ReduceMax %0 : Float32"), std::string::npos) << k;
  EXPECT_NE(k.find("ReduceMin"), std::string::npos) << k;
  EXPECT_NE(k.find("Ne %0 %0"), std::string::npos) << k;  // NaN
}

}  // namespace
}  // namespace kiln
