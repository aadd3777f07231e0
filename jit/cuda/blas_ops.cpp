#include "jit/cuda/blas_ops.h"

#include <climits>
#include <cstring>
#include <type_traits>

#include "jit/cuda/matmul_kernel.h"
#include "ops/eager_helpers.h"
#include "runtime/cuda/cublas_library.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

namespace drv = ::kiln::cuda;

bool fits_int(int64_t v) { return v <= INT_MAX; }

// How one row-major matrix (rows x cols, element strides sr / sc) is handed to cuBLAS. cuBLAS is
// column-major, so kiln computes C^T = B^T A^T: a row-major matrix with unit column stride is
// its own transpose in column-major (CUBLAS_OP_N, ld = its row stride), one with unit row stride
// is a column-major matrix to transpose (CUBLAS_OP_T, ld = its column stride).
struct BlasLayout {
  bool ok = false;
  drv::cublasOperation_t op = drv::kCublasOpN;
  int64_t ld = 0;
};

BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  // A dim of size 1 has no meaningful stride, so it never disqualifies a layout.
  if ((sc == 1 || cols == 1) && (rows == 1 || sr >= std::max<int64_t>(1, cols)))
    return {true, drv::kCublasOpN, rows == 1 ? std::max<int64_t>(1, cols) : sr};
  if ((sr == 1 || rows == 1) && (cols == 1 || sc >= std::max<int64_t>(1, rows)))
    return {true, drv::kCublasOpT, cols == 1 ? std::max<int64_t>(1, rows) : sc};
  return {};
}

// Element offsets of each output product's a- and b-matrices over the broadcast batch dims.
void batch_offsets(const TensorImpl* x, const TensorImpl* y, const DimVector& out_sizes,
                   std::vector<int64_t>& oa, std::vector<int64_t>& ob) {
  const int64_t nb = static_cast<int64_t>(out_sizes.size()) - 2;
  DimVector sa(nb, 0), sb(nb, 0);
  for (int64_t d = 0; d < nb; ++d) {
    const int64_t da = d - (nb - (x->dim() - 2));  // right-aligned batch dims
    const int64_t db = d - (nb - (y->dim() - 2));
    if (da >= 0 && x->sizes()[da] != 1) sa[d] = x->strides()[da];
    if (db >= 0 && y->sizes()[db] != 1) sb[d] = y->strides()[db];
  }
  int64_t count = 1;
  for (int64_t d = 0; d < nb; ++d) count *= out_sizes[d];
  oa.resize(static_cast<size_t>(count));
  ob.resize(static_cast<size_t>(count));
  DimVector idx(nb, 0);
  int64_t pa = x->offset(), pb = y->offset();
  for (int64_t i = 0; i < count; ++i) {
    oa[i] = pa;
    ob[i] = pb;
    for (int64_t d = nb - 1; d >= 0; --d) {  // odometer increment
      pa += sa[d];
      pb += sb[d];
      if (++idx[d] < out_sizes[d]) break;
      pa -= sa[d] * idx[d];
      pb -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
}

// Calls f(first, count, step_a, step_b) for consecutive runs of products whose offsets advance
// by constant, non-negative steps: one strided-batched call each.
template <class F>
void for_each_run(const std::vector<int64_t>& oa, const std::vector<int64_t>& ob, F&& f) {
  const size_t n = oa.size();
  size_t i = 0;
  while (i < n) {
    size_t len = 1;
    int64_t sa = 0, sb = 0;
    if (i + 1 < n && oa[i + 1] >= oa[i] && ob[i + 1] >= ob[i]) {
      sa = oa[i + 1] - oa[i];
      sb = ob[i + 1] - ob[i];
      len = 2;
      while (i + len < n && len < size_t{INT_MAX} && oa[i + len] - oa[i + len - 1] == sa &&
             ob[i + len] - ob[i + len - 1] == sb)
        ++len;
    }
    f(i, static_cast<int64_t>(len), sa, sb);
    i += len;
  }
}

const char* base(const Tensor& t) {
  // The storage's start: batch offsets are absolute in elements (they include the offset).
  const TensorImpl* x = t.impl();
  return static_cast<const char*>(x->data()) -
         x->offset() * static_cast<int64_t>(itemsize(x->dtype()));
}

template <class T>
void cublas_gemm(drv::cublasHandle_t h, const BlasLayout& la, const BlasLayout& lb, int64_t M,
                 int64_t N, int64_t K, const T* A, int64_t step_a, const T* B, int64_t step_b, T* C,
                 int64_t count) {
  const drv::Cublas& api = drv::cublas();
  const T one = 1, zero = 0;
  // C^T [N, M] = B^T [N, K] @ A^T [K, M] in column-major terms; C's leading dimension is N.
  if constexpr (std::is_same_v<T, float>) {
    if (count == 1)
      drv::check_cublas(api.cublasSgemm(h, lb.op, la.op, int(N), int(M), int(K), &one, B,
                                        int(lb.ld), A, int(la.ld), &zero, C, int(N)),
                        "matmul: cublasSgemm");
    else
      drv::check_cublas(api.cublasSgemmStridedBatched(h, lb.op, la.op, int(N), int(M), int(K), &one,
                                                      B, int(lb.ld), step_b, A, int(la.ld), step_a,
                                                      &zero, C, int(N), M * N, int(count)),
                        "matmul: cublasSgemmStridedBatched");
  } else {
    if (count == 1)
      drv::check_cublas(api.cublasDgemm(h, lb.op, la.op, int(N), int(M), int(K), &one, B,
                                        int(lb.ld), A, int(la.ld), &zero, C, int(N)),
                        "matmul: cublasDgemm");
    else
      drv::check_cublas(api.cublasDgemmStridedBatched(h, lb.op, la.op, int(N), int(M), int(K), &one,
                                                      B, int(lb.ld), step_b, A, int(la.ld), step_a,
                                                      &zero, C, int(N), M * N, int(count)),
                        "matmul: cublasDgemmStridedBatched");
  }
}

// cuBLAS's handle for the device, or an error that names the op and says why there is none.
drv::cublasHandle_t handle_for(Device d) {
  try {
    return drv::cublas_handle(d.index);
  } catch (const Error& e) {
    fail("matmul: cannot run on {} tensors: {}", d, e.what());
  }
}

void matmul_on_cuda(const OpCall& c, const Tensor& out) {
  Tensor a = c.inputs[0];
  Tensor b = c.inputs[1];
  const TensorImpl* o = out.impl();
  const Device device = o->device();
  const DType dt = o->dtype();
  const size_t item = itemsize(dt);
  const int64_t M = o->sizes()[o->dim() - 2];
  const int64_t N = o->sizes()[o->dim() - 1];
  const int64_t K = a.impl()->sizes()[a.impl()->dim() - 1];
  if (o->numel() == 0) return;
  const drv::DeviceContext& ctx = drv::make_current(device.index);
  if (K == 0) {  // an empty sum: zeros
    drv::check(drv::driver().cuMemsetD8Async(reinterpret_cast<uintptr_t>(o->data()), 0,
                                             static_cast<size_t>(o->numel()) * item, ctx.stream),
               "matmul: cuMemsetD8Async");
    return;
  }
  auto last2 = [](const Tensor& t, int64_t& sr, int64_t& sc) {
    const TensorImpl* i = t.impl();
    sr = i->strides()[i->dim() - 2];
    sc = i->strides()[i->dim() - 1];
  };
  const bool use_blas = is_floating(dt) && fits_int(M) && fits_int(N) && fits_int(K);
  BlasLayout la, lb;
  if (use_blas) {
    int64_t sr, sc;
    last2(a, sr, sc);
    la = blas_layout(M, K, sr, sc);
    if (!la.ok || !fits_int(la.ld)) {  // not a BLAS layout: row-major on the device first
      a = eager_contiguous(a);
      la = blas_layout(M, K, K, 1);
    }
    last2(b, sr, sc);
    lb = blas_layout(K, N, sr, sc);
    if (!lb.ok || !fits_int(lb.ld)) {
      b = eager_contiguous(b);
      lb = blas_layout(K, N, N, 1);
    }
  }
  std::vector<int64_t> oa, ob;
  batch_offsets(a.impl(), b.impl(), o->sizes(), oa, ob);
  const char* A = base(a);
  const char* B = base(b);
  char* C = static_cast<char*>(o->data());
  const auto bytes = [&](int64_t elements) { return elements * static_cast<int64_t>(item); };

  if (use_blas) {
    drv::cublasHandle_t h = handle_for(device);
    for_each_run(oa, ob, [&](size_t first, int64_t count, int64_t step_a, int64_t step_b) {
      const char* pa = A + bytes(oa[first]);
      const char* pb = B + bytes(ob[first]);
      char* pc = C + bytes(static_cast<int64_t>(first) * M * N);
      if (dt == DType::Float32)
        cublas_gemm<float>(h, la, lb, M, N, K, reinterpret_cast<const float*>(pa), step_a,
                           reinterpret_cast<const float*>(pb), step_b, reinterpret_cast<float*>(pc),
                           count);
      else
        cublas_gemm<double>(h, la, lb, M, N, K, reinterpret_cast<const double*>(pa), step_a,
                            reinterpret_cast<const double*>(pb), step_b,
                            reinterpret_cast<double*>(pc), count);
    });
    return;
  }
  // Integers, or sizes beyond cuBLAS's int: kiln's kernel, over the operands' own strides.
  MatmulRun r;
  r.M = M;
  r.N = N;
  r.K = K;
  last2(a, r.sam, r.sak);
  last2(b, r.sbk, r.sbn);
  for_each_run(oa, ob, [&](size_t first, int64_t count, int64_t step_a, int64_t step_b) {
    r.a = A + bytes(oa[first]);
    r.b = B + bytes(ob[first]);
    r.c = C + bytes(static_cast<int64_t>(first) * M * N);
    r.batches = count;
    r.batch_a = step_a;
    r.batch_b = step_b;
    launch_matmul_kernel(device.index, dt, r);
  });
}

}  // namespace

void register_cuda_blas_kernels() {
  register_device_kernel(OpId::Matmul, Device::Type::CUDA, matmul_on_cuda);
}

}  // namespace kiln::jit::cuda
