// The CUDA kernels of the random, index, shape and factory ops without a GPU: every source kernel
// (index_ops.h, random_ops.h) for every dtype its op accepts, and the loop kernels of rand and
// dropout (the RandUniform leaf rendered by render.cpp), compiled by NVRTC to CUBINs for sm_90
// that must contain each kernel. Skips when libnvrtc is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cuda_device_util.h"
#include "cuda_test_util.h"
#include "jit/cuda/factory_ops.h"
#include "jit/cuda/index_ops.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/op_kernel.h"
#include "jit/cuda/random_ops.h"
#include "jit/cuda/render.h"
#include "kiln/kiln.h"
#include "runtime/cuda/kernel_errors.h"
#include "runtime/dispatcher.h"
#include "runtime/init.h"

namespace kiln {
namespace {

using testing::kAll;

using jit::cuda::CudaSource;

std::vector<CudaSource> every_source() {
  std::vector<CudaSource> all = jit::cuda::cuda_index_sources();
  for (CudaSource& s : jit::cuda::cuda_factory_sources()) all.push_back(std::move(s));
  for (DType t : kAll) {
    all.push_back(jit::cuda::randint_source(t));
    if (!is_floating(t)) continue;
    all.push_back(jit::cuda::randn_source(t));
    for (const auto& k :
         {jit::cuda::cuda_rand_loop_kernel(t), jit::cuda::cuda_dropout_loop_kernel(t)}) {
      const auto r = jit::cuda::render_cuda_kernel(
          k, fmt::format("kiln_{}_{}", k.num_inputs() == 0 ? "rand" : "dropout", dtype_name(t)));
      all.push_back({r.name, r.source});
    }
  }
  return all;
}

TEST(CudaIndexRender, EveryIndexAndRandomKernelCompilesForSm90) {
  KILN_CUDA_CODEGEN_TEST_ONCE();
  KILN_SKIP_WITHOUT_NVRTC();
  const std::vector<CudaSource> all = every_source();
  // 5 dtypes x 2 index types x (gather, scatter_add) + 5 x (tril/triu, eye) + 4 x (arange,
  // linspace) + one_hot + 5 randint + 2 x (randn, rand, dropout).
  EXPECT_EQ(all.size(), 20u + 10u + 8u + 1u + 5u + 6u);
  std::vector<std::string> sources, names;
  for (const CudaSource& k : all) {
    sources.push_back(k.source);
    names.push_back(k.name);
  }
  testing::expect_all_compile_for_sm90(sources, names, names, "every_index_op");
}

// The RandUniform leaf draws Philox at the counter (counter words) + the element's linear index,
// from the four Int32 params, as the CPU JIT does; a kernel without it carries no Philox code.
TEST(CudaIndexRender, RandUniformDrawsAtCounterPlusIndex) {
  for (DType t : {DType::Float32, DType::Float64}) {
    const jit::LoopKernel k = jit::cuda::cuda_rand_loop_kernel(t);
    EXPECT_TRUE(jit::cuda::cuda_renders(jit::ExprOp::RandUniform, t));
    const std::string src = jit::cuda::render_cuda_kernel(k, "kiln_rand").source;
    const jit::cuda::CudaArgLayout layout{1, 4};
    const std::string want = fmt::format(
        "kiln_rand_uniform_{}((kiln_u64)(unsigned)a.w[{}] << 32 | (kiln_u64)(unsigned)a.w[{}], "
        "((kiln_u64)(unsigned)a.w[{}] << 32 | (kiln_u64)(unsigned)a.w[{}]) + (kiln_u64)i)",
        t == DType::Float32 ? "f32" : "f64", layout.param(1), layout.param(0), layout.param(3),
        layout.param(2));
    EXPECT_NE(src.find(want), std::string::npos) << src;
    EXPECT_NE(src.find("0xD2511F53u"), std::string::npos);
  }
  const jit::LoopKernel plain = jit::LoopKernel::uniform(DType::Float32, 1);
  jit::LoopKernel k = plain;
  k.stores = {k.load(0)};
  EXPECT_EQ(jit::cuda::render_cuda_kernel(k, "kiln_copy").source.find("kiln_philox"),
            std::string::npos);
}

// dropout's kernel is the CPU JIT's lowering: p is a Float64 param compared with the uniform
// widened to double, the scale 1 / (1 - p) is computed in double and rounded, as eager does.
TEST(CudaIndexRender, DropoutKernelComparesInDouble) {
  const jit::LoopKernel k = jit::cuda::cuda_dropout_loop_kernel(DType::Float32);
  ASSERT_EQ(k.num_params(), 5);
  EXPECT_EQ(k.params[0], DType::Float64);
  for (int p = 1; p < 5; ++p) EXPECT_EQ(k.params[p], DType::Int32);
  const std::string text = jit::to_text(k);
  EXPECT_NE(text.find("RandUniform"), std::string::npos) << text;
  EXPECT_NE(text.find("Ge"), std::string::npos) << text;
  EXPECT_NE(text.find("Cast"), std::string::npos) << text;  // u widened to Float64
}

// The kiln::Error raised at a sync point after a kernel reported a bad index.
TEST(CudaIndexRender, KernelErrorMessageNamesTheOpIndexAndRange) {
  const uint64_t gather = static_cast<uint64_t>(OpId::Gather) + 1;
  EXPECT_EQ(cuda::kernel_error_message({gather, 7, 0, 5}, 0),
            "gather: index 7 is out of range for dim 0 of size 5 (expected an index in [0, 5); "
            "found on cuda:0 at the next sync)");
  const uint64_t one_hot = static_cast<uint64_t>(OpId::OneHot) + 1;
  EXPECT_EQ(cuda::kernel_error_message({one_hot, static_cast<uint64_t>(-3), 2, 4}, 1).substr(0, 58),
            "one_hot: index -3 is out of range for dim 2 of size 4 (exp");
  EXPECT_EQ(cuda::kernel_error_message({9999, 1, 0, 1}, 0).substr(0, 12), "cuda kernel:");
}

// Every op of this part has a CUDA form registered by kiln::init() (the table needs no GPU).
TEST(CudaIndexRender, EveryRandomIndexAndFactoryOpHasACudaForm) {
  init();
  constexpr OpId ops[] = {OpId::Rand,        OpId::Randn,  OpId::Randint,   OpId::Dropout,
                          OpId::IndexSelect, OpId::Gather, OpId::Embedding, OpId::ScatterAdd,
                          OpId::OneHot,      OpId::Tril,   OpId::Triu,      OpId::Arange,
                          OpId::Linspace,    OpId::Eye,    OpId::Cat,       OpId::AsStridedScatter};
  for (OpId id : ops)
    EXPECT_NO_THROW(EXPECT_NE(device_kernel(op_def(id), id, Device::cuda(0)), nullptr))
        << op_name(id);
}

}  // namespace
}  // namespace kiln
