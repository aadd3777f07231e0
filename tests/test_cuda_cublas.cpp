// cuBLAS loading and kiln's own matmul kernel, without a GPU (CI): libcublas found and every
// entry point resolved when the toolkit is installed, a missing or foreign library reported by
// name, cuBLAS statuses turned into text, a handle refused with the device's reason where CUDA is
// not usable, the NVRTC matmul kernel (integer matmul on CUDA) compiled for sm_90 for every
// dtype it serves, and the plan that cuts a matmul into cuBLAS calls (jit/cuda/matmul_plan.h),
// run through an emulation of cuBLAS's column-major gemm as its documentation defines it and
// compared with the CPU's matmul, exactly (small integers in Float64). The declarations themselves
// are checked against cublas_api.h at build time (runtime/cuda/abi_check.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "expect_error.h"
#include "jit/cuda/matmul_kernel.h"
#include "jit/cuda/matmul_plan.h"
#include "jit/cuda/nvrtc.h"
#include "kiln/kiln.h"
#include "runtime/cuda/cublas_library.h"

namespace kiln {
namespace {

using testing::expect_error;

TEST(CudaCublas, ToolkitLibraryLoadsWithEveryEntryPoint) {
  const cuda::CublasStatus& st = cuda::cublas_status();
  if (!st.usable) GTEST_SKIP() << "no libcublas here: " << st.reason;
  std::printf("cuBLAS %s from %s\n", st.version().c_str(), st.path.c_str());
  EXPECT_TRUE(st.reason.empty());
  EXPECT_GE(st.major, 12);  // kiln tries libcublas.so.13 and .12
  EXPECT_NE(st.path.find("libcublas"), std::string::npos) << st.path;
  const cuda::Cublas& api = cuda::cublas();
#define KILN_EXPECT_RESOLVED(member, symbol, ret, params) \
  EXPECT_NE(reinterpret_cast<void*>(api.member), nullptr) << #symbol;
  KILN_CUBLAS_API(KILN_EXPECT_RESOLVED)
#undef KILN_EXPECT_RESOLVED
  // The library's own strings (CUBLAS_STATUS_INVALID_VALUE is 7).
  EXPECT_EQ(cuda::cublas_error_text(api, 7).rfind("CUBLAS_STATUS_INVALID_VALUE", 0), 0u)
      << cuda::cublas_error_text(api, 7);
  expect_error([&] { cuda::check_cublas(7, "cublasSgemm"); }, "cublasSgemm failed",
               "CUBLAS_STATUS_INVALID_VALUE");
  cuda::check_cublas(cuda::kCublasSuccess, "nothing");  // success does not raise
}

TEST(CudaCublas, MissingOrForeignLibraryIsReportedByName) {
  const char* missing[] = {"libkiln-no-such-cublas.so.99", "/nonexistent/libcublas.so.13"};
  cuda::LoadedCublas none = cuda::load_cublas(missing);
  EXPECT_FALSE(none.status.usable);
  EXPECT_EQ(none.status.reason.rfind("no libcublas (", 0), 0u) << none.status.reason;
  EXPECT_NE(none.status.reason.find("libkiln-no-such-cublas.so.99"), std::string::npos);
  EXPECT_NE(none.status.reason.find("/nonexistent/libcublas.so.13"), std::string::npos);
  // A library that loads but is not cuBLAS: the first missing entry point is named.
  const char* foreign[] = {"libm.so.6"};
  cuda::LoadedCublas libm = cuda::load_cublas(foreign);
  EXPECT_FALSE(libm.status.usable);
  EXPECT_NE(libm.status.reason.find("lacks cublasGetProperty"), std::string::npos)
      << libm.status.reason;
  // Statuses without the library's strings still say which status it was.
  EXPECT_EQ(cuda::cublas_error_text(cuda::Cublas{}, 13), "cuBLAS status 13");
}

TEST(CudaCublas, HandleAndMatmulNeedAUsableDevice) {
  if (cuda_is_available()) GTEST_SKIP() << "a GPU is present (tests/test_cuda_matmul.cpp runs)";
  expect_error([] { cuda::cublas_handle(0); }, "device cuda:0 is not available",
               cuda_unavailable_reason());
  // No CUDA tensor can be made, so matmul never reaches cuBLAS: the factory says why.
  expect_error(
      [] {
        matmul(ones({2, 2}, TensorOptions().device(Device::cuda())), ones({2, 2}));
      },
      "device cuda:0 is not available");
}

TEST(CudaCublas, MatmulKernelCompilesForSm90ForEveryDtype) {
  KILN_SKIP_WITHOUT_NVRTC();
  for (DType dt : {DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    const std::string name = jit::cuda::matmul_kernel_name(dt);
    const std::string src = jit::cuda::matmul_kernel_source(dt);
    EXPECT_EQ(src.find("#include"), std::string::npos) << "header-free: " << name;
    const std::vector<char> cubin =
        jit::cuda::nvrtc_compile(src, name, jit::cuda::nvrtc_options(90));
    ASSERT_GT(cubin.size(), 64u) << name;
    EXPECT_NE(std::search(cubin.begin(), cubin.end(), name.begin(), name.end()), cubin.end())
        << name << " is not in its CUBIN";
  }
  // Integers accumulate in the unsigned type (wrapping is defined, as the CPU's loop).
  EXPECT_NE(jit::cuda::matmul_kernel_source(DType::Int32).find("typedef unsigned int Acc"),
            std::string::npos);
  EXPECT_NE(jit::cuda::matmul_kernel_source(DType::Int64).find("typedef unsigned long long Acc"),
            std::string::npos);
  expect_error([] { jit::cuda::matmul_kernel_source(DType::Bool); }, "matmul",
               "no CUDA matmul kernel for Bool");
}

// cuBLAS's gemm as documented (column-major): C(i, j) = sum_l op(X)(i, l) op(Y)(l, j) for
// i < m, j < n, where op(Z)(r, c) is Z[r + c ld] (CUBLAS_OP_N) or Z[c + r ld] (CUBLAS_OP_T). The
// leading dimensions are checked as cuBLAS checks them (CUBLAS_STATUS_INVALID_VALUE otherwise).
void emulated_gemm(bool tx, bool ty, int64_t m, int64_t n, int64_t k, const double* X, int64_t ldx,
                   const double* Y, int64_t ldy, double* C, int64_t ldc) {
  ASSERT_GE(ldx, std::max<int64_t>(1, tx ? k : m));
  ASSERT_GE(ldy, std::max<int64_t>(1, ty ? n : k));
  ASSERT_GE(ldc, std::max<int64_t>(1, m));
  auto at = [](const double* Z, bool t, int64_t ld, int64_t r, int64_t c) {
    return t ? Z[c + r * ld] : Z[r + c * ld];
  };
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += at(X, tx, ldx, i, l) * at(Y, ty, ldy, l, j);
      C[i + j * ldc] = acc;
    }
}

// Small integers as Float64 (every product and sum exact), in a fresh contiguous storage.
Tensor ints(const Shape& shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = double((i * 7 + seed * 13) % 11) - 5;
  return from_vector(v, shape);
}

// The plan for a @ b (the primitive: both at least 2-D) executed as the CUDA kernel would,
// through emulated cuBLAS calls over the operands' storage, against the CPU's matmul.
jit::cuda::MatmulPlan run_plan(Tensor a, Tensor b, const std::string& what) {
  const Tensor want = matmul(a, b);
  jit::cuda::MatmulPlan p = jit::cuda::plan_matmul(a.impl(), b.impl(), want.impl()->sizes());
  EXPECT_TRUE(p.blas) << what;
  const jit::cuda::MatmulPlan first = p;
  if (p.copy_a || p.copy_b) {
    if (p.copy_a) a = a.contiguous();
    if (p.copy_b) b = b.contiguous();
    p = jit::cuda::plan_matmul(a.impl(), b.impl(), want.impl()->sizes());
    EXPECT_FALSE(p.copy_a || p.copy_b) << what << ": a row-major copy is a BLAS layout";
  }
  const double* A = static_cast<const double*>(a.impl()->data()) - a.impl()->offset();
  const double* B = static_cast<const double*>(b.impl()->data()) - b.impl()->offset();
  std::vector<double> C(static_cast<size_t>(want.numel()), std::nan(""));
  int64_t products = 0;
  for (const auto& r : p.runs) {
    EXPECT_EQ(r.first, products) << what << ": runs cover the products in order";
    for (int64_t j = 0; j < r.count; ++j) {
      emulated_gemm(p.b.trans, p.a.trans, p.N, p.M, p.K, B + r.b_offset + j * r.step_b, p.b.ld,
                    A + r.a_offset + j * r.step_a, p.a.ld, C.data() + (r.first + j) * p.M * p.N,
                    p.N);
    }
    products += r.count;
  }
  EXPECT_EQ(want.to_vector<double>(), C) << what;
  return first.copy_a || first.copy_b ? first : p;
}

TEST(CudaCublas, MatmulPlanIsTheCpuProductThroughCublasSemantics) {
  using jit::cuda::MatmulPlan;
  // Plain, transposed views (op flags), column slices (leading dims): never copied.
  MatmulPlan p = run_plan(ints({5, 7}, 1), ints({7, 3}, 2), "2-D");
  EXPECT_FALSE(p.copy_a || p.copy_b || p.a.trans || p.b.trans);
  EXPECT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].count, 1);
  p = run_plan(ints({7, 5}, 1).t(), ints({3, 7}, 2).t(), "both transposed");
  EXPECT_TRUE(p.a.trans && p.b.trans && !p.copy_a && !p.copy_b);
  EXPECT_EQ(p.a.ld, 5);
  EXPECT_EQ(p.b.ld, 7);
  p = run_plan(ints({5, 10}, 3).slice(1, 2, 9), ints({9, 6}, 4).slice(0, 1, 8).slice(1, 1, 4),
               "column slices");
  EXPECT_FALSE(p.copy_a || p.copy_b);
  EXPECT_EQ(p.a.ld, 10);
  EXPECT_EQ(p.b.ld, 6);
  p = run_plan(ints({1, 7}, 5), ints({7, 1}, 6), "row times column");
  EXPECT_FALSE(p.copy_a || p.copy_b);
  p = run_plan(ints({7, 1}, 5).t(), ints({1, 7}, 6).t(), "row times column, transposed");
  EXPECT_FALSE(p.copy_a || p.copy_b);
  // Not BLAS layouts: a column step, a stride-0 column: copied row-major first.
  p = run_plan(ints({5, 14}, 7).slice(1, 0, 14, 2), ints({7, 3}, 8), "column step");
  EXPECT_TRUE(p.copy_a && !p.copy_b);
  p = run_plan(ints({5, 7}, 7), ints({7, 1}, 8).expand({7, 4}), "stride-0 columns");
  EXPECT_TRUE(p.copy_b && !p.copy_a);
  // Batches: bmm and a broadcast operand are one strided-batched call.
  p = run_plan(ints({4, 5, 7}, 1), ints({4, 7, 3}, 2), "bmm");
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].count, 4);
  EXPECT_EQ(p.runs[0].step_a, 35);
  EXPECT_EQ(p.runs[0].step_b, 21);
  p = run_plan(ints({4, 5, 7}, 1), ints({7, 3}, 2).expand({4, 7, 3}), "expanded b");
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].step_b, 0);
  p = run_plan(ints({4, 7, 5}, 1).transpose(1, 2), ints({1, 7, 3}, 2), "transposed batch, b bcast");
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_TRUE(p.a.trans);
  EXPECT_EQ(p.runs[0].step_b, 0);
  // [2, 1] x [3] batch dims: a run per outer index.
  p = run_plan(ints({2, 1, 5, 7}, 3), ints({3, 7, 3}, 4), "broadcast batch dims");
  EXPECT_EQ(p.runs.size(), 2u);
  // Permuted batch dims: offsets go back and forth; each run is still constant-stride.
  p = run_plan(ints({3, 4, 5, 7}, 5).permute({1, 0, 2, 3}), ints({4, 3, 7, 2}, 6),
               "permuted batch dims");
  EXPECT_EQ(p.runs.size(), 4u);
  p = run_plan(ints({2, 3, 4, 5, 7}, 5).slice(1, 1, 3), ints({7, 3}, 6).expand({2, 2, 4, 7, 3}),
               "sliced batch");
  // Empty outputs: no call at all.
  p = jit::cuda::plan_matmul(ints({0, 7}, 1).impl(), ints({7, 3}, 2).impl(), {0, 3});
  EXPECT_TRUE(p.runs.empty());
  p = jit::cuda::plan_matmul(ints({0, 5, 7}, 1).impl(), ints({0, 7, 3}, 2).impl(), {0, 5, 3});
  EXPECT_TRUE(p.runs.empty());
  // Integers go to kiln's kernel (no cuBLAS layout needed: it reads any strides).
  p = jit::cuda::plan_matmul(ints({5, 14}, 7).slice(1, 0, 14, 2).to(kInt64).impl(),
                             ints({7, 3}, 8).to(kInt64).impl(), {5, 3});
  EXPECT_FALSE(p.blas || p.copy_a || p.copy_b);
  EXPECT_EQ(p.runs.size(), 1u);
}

}  // namespace
}  // namespace kiln