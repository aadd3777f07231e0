#include "jit/cuda/blas_ops.h"

#include <type_traits>

#include "jit/cuda/matmul_kernel.h"
#include "jit/cuda/matmul_plan.h"
#include "ops/eager_helpers.h"
#include "runtime/cuda/cublas_library.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

namespace drv = ::kiln::cuda;

drv::cublasOperation_t op_of(const BlasOperand& o) {
  return o.trans ? drv::kCublasOpT : drv::kCublasOpN;
}

// One run of the plan: C^T = op(B) op(A) in column-major terms, C's leading dimension N.
template <class T>
void cublas_run(drv::cublasHandle_t h, const MatmulPlan& p, const GemmRun& r, const T* A,
                const T* B, T* C) {
  const drv::Cublas& api = drv::cublas();
  const T one = 1, zero = 0;
  const int m = int(p.N), n = int(p.M), k = int(p.K);
  const int lda = int(p.a.ld), ldb = int(p.b.ld), ldc = int(p.N);
  A += r.a_offset;
  B += r.b_offset;
  C += r.first * p.M * p.N;
  if constexpr (std::is_same_v<T, float>) {
    if (r.count == 1)
      drv::check_cublas(
          api.cublasSgemm(h, op_of(p.b), op_of(p.a), m, n, k, &one, B, ldb, A, lda, &zero, C, ldc),
          "matmul: cublasSgemm");
    else
      drv::check_cublas(
          api.cublasSgemmStridedBatched(h, op_of(p.b), op_of(p.a), m, n, k, &one, B, ldb, r.step_b,
                                        A, lda, r.step_a, &zero, C, ldc, p.M * p.N, int(r.count)),
          "matmul: cublasSgemmStridedBatched");
  } else {
    if (r.count == 1)
      drv::check_cublas(
          api.cublasDgemm(h, op_of(p.b), op_of(p.a), m, n, k, &one, B, ldb, A, lda, &zero, C, ldc),
          "matmul: cublasDgemm");
    else
      drv::check_cublas(
          api.cublasDgemmStridedBatched(h, op_of(p.b), op_of(p.a), m, n, k, &one, B, ldb, r.step_b,
                                        A, lda, r.step_a, &zero, C, ldc, p.M * p.N, int(r.count)),
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

// The storage's start: the plan's offsets are absolute (they include the view's offset).
template <class T>
const T* storage_base(const Tensor& t) {
  const TensorImpl* x = t.impl();
  return static_cast<const T*>(x->data()) - x->offset();
}

void matmul_on_cuda(const OpCall& c, const Tensor& out) {
  Tensor a = c.inputs[0];
  Tensor b = c.inputs[1];
  const TensorImpl* o = out.impl();
  const Device device = o->device();
  const DType dt = o->dtype();
  if (o->numel() == 0) return;
  const drv::DeviceContext& ctx = drv::make_current(device.index);
  MatmulPlan p = plan_matmul(a.impl(), b.impl(), o->sizes());
  if (p.K == 0) {  // an empty sum: zeros
    drv::check(
        drv::driver().cuMemsetD8Async(reinterpret_cast<uintptr_t>(o->data()), 0,
                                      static_cast<size_t>(o->numel()) * itemsize(dt), ctx.stream),
        "matmul: cuMemsetD8Async");
    return;
  }
  if (p.copy_a || p.copy_b) {  // not a BLAS layout: row-major on the device first
    if (p.copy_a) a = eager_contiguous(a);
    if (p.copy_b) b = eager_contiguous(b);
    p = plan_matmul(a.impl(), b.impl(), o->sizes());
  }
  visit_dtype(dt, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_floating_point_v<T>) {
      if (p.blas) {
        drv::cublasHandle_t h = handle_for(device);
        for (const GemmRun& r : p.runs)
          cublas_run<T>(h, p, r, storage_base<T>(a), storage_base<T>(b),
                        static_cast<T*>(o->data()));
        return;
      }
    }
    if constexpr (std::is_same_v<T, bool>) {
      fail("matmul: not supported for Bool tensors");
    } else {
      // Integers, or sizes beyond cuBLAS's int: kiln's kernel over the operands' own strides.
      const TensorImpl* x = a.impl();
      const TensorImpl* y = b.impl();
      MatmulRun k;
      k.M = p.M;
      k.N = p.N;
      k.K = p.K;
      k.sam = x->strides()[x->dim() - 2];
      k.sak = x->strides()[x->dim() - 1];
      k.sbk = y->strides()[y->dim() - 2];
      k.sbn = y->strides()[y->dim() - 1];
      for (const GemmRun& r : p.runs) {
        k.a = storage_base<T>(a) + r.a_offset;
        k.b = storage_base<T>(b) + r.b_offset;
        k.c = static_cast<T*>(o->data()) + r.first * p.M * p.N;
        k.batches = r.count;
        k.batch_a = r.step_a;
        k.batch_b = r.step_b;
        launch_matmul_kernel(device.index, dt, k);
      }
    }
  });
}

}  // namespace

void register_cuda_blas_kernels() {
  register_device_kernel(OpId::Matmul, Device::Type::CUDA, matmul_on_cuda);
}

}  // namespace kiln::jit::cuda
