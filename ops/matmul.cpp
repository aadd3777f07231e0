// Matrix products: matmul (torch.matmul's 1-D / 2-D / batched-with-broadcast rules), mm, bmm.
//
// One primitive, OpId::Matmul: a [..., M, K] @ b [..., K, N] -> [broadcast(batch), M, N], both
// operands at least 2-D and of one dtype. The public functions validate with their own names and
// reach it through views: a 1-D operand is unsqueezed to a matrix and the extra dim squeezed off
// the result, and a contiguous batched `a` times a 2-D `b` folds into one [B*M, K] @ [K, N]
// product. Attrs: none.
//
// Kernels: Float32/Float64 go to OpenBLAS gemm (a product of one row, a 1-D left operand, to its
// dot or gemv on one thread: ops/cpu/blas_gemm.cpp). A matrix whose last two dims have unit stride
// in either order is passed as is (trans flag + leading dim: a transposed view, a slice along the
// columns with its row stride as lda); any other layout (a column step, a stride-0 dim) is copied
// row-major first. OpenBLAS's thread count is picked per product from its flops (one thread for
// small products, at most KILN_NUM_THREADS, one inside a kiln parallel region); a batch of small
// products is split over kiln's threads instead. Int32/Int64 use a blocked loop, parallel over
// output rows, that wraps on overflow as PyTorch does. Bool is an error, as in PyTorch.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/cpu/blas_gemm.h"
#include "ops/eager_helpers.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "runtime/config.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

// Dtype and device checks shared by matmul, mm and bmm (messages name the public op).
void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "{}: an argument is an undefined tensor", op);
  const TensorImpl* x = a.impl();
  const TensorImpl* y = b.impl();
  KILN_CHECK(x->dtype() == y->dtype(),
             "{}: expected both to have the same dtype, but got {} and {}", op, describe(a),
             describe(b));
  KILN_CHECK(x->dtype() != DType::Bool,
             "{}: not supported for Bool tensors ({} and {}); expected a numeric dtype", op,
             describe(a), describe(b));
  const Tensor both[] = {a, b};
  common_device(op, both);
}

// The contraction sizes must agree: K of a [.., M, K] (or [K]) and of b [.., K, N] (or [K]).
void check_inner(const char* op, const Tensor& a, const Tensor& b) {
  const TensorImpl* x = a.impl();
  const TensorImpl* y = b.impl();
  int64_t ka = x->sizes()[x->dim() - 1];
  int64_t kb = y->dim() == 1 ? y->sizes()[0] : y->sizes()[y->dim() - 2];
  KILN_CHECK(ka == kb, "{}: shapes {} and {} cannot be multiplied ({} != {})", op, describe(a),
             describe(b), ka, kb);
}

void matmul_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& a = c.inputs[0];
  const Tensor& b = c.inputs[1];
  check_operands("matmul", a, b);
  const TensorImpl* x = a.impl();
  const TensorImpl* y = b.impl();
  KILN_CHECK(x->dim() >= 2 && y->dim() >= 2,
             "matmul: the primitive takes operands of at least 2 dims, got {} and {}", describe(a),
             describe(b));
  check_inner("matmul", a, b);
  DimVector ba(x->sizes().begin(), x->sizes().end() - 2);
  DimVector bb(y->sizes().begin(), y->sizes().end() - 2);
  m.sizes = broadcast_shapes("matmul", ba, bb);
  m.sizes.push_back(x->sizes()[x->dim() - 2]);
  m.sizes.push_back(y->sizes()[y->dim() - 1]);
  m.dtype = x->dtype();
  m.device = x->device();
}

// ---- kernel pieces ----

bool fits_int(int64_t v) { return v <= INT_MAX; }

// Offsets (in elements) of each output batch's a- and b-matrices, honouring broadcast batch dims.
struct BatchOffsets {
  DimVector a, b;  // inline storage: a plain 2-D product allocates nothing here
};

BatchOffsets batch_offsets(const TensorImpl* x, const TensorImpl* y, const DimVector& out_sizes) {
  const int64_t nb = static_cast<int64_t>(out_sizes.size()) - 2;
  DimVector sa(nb, 0), sb(nb, 0);
  for (int64_t d = 0; d < nb; ++d) {
    int64_t da = d - (nb - (x->dim() - 2));  // right-aligned batch dims
    int64_t db = d - (nb - (y->dim() - 2));
    if (da >= 0 && x->sizes()[da] != 1) sa[d] = x->strides()[da];
    if (db >= 0 && y->sizes()[db] != 1) sb[d] = y->strides()[db];
  }
  int64_t count = 1;
  for (int64_t d = 0; d < nb; ++d) count *= out_sizes[d];
  BatchOffsets off;
  off.a.resize(static_cast<size_t>(count));
  off.b.resize(static_cast<size_t>(count));
  DimVector idx(nb, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < count; ++i) {
    off.a[i] = oa;
    off.b[i] = ob;
    for (int64_t d = nb - 1; d >= 0; --d) {  // odometer increment
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < out_sizes[d]) break;
      oa -= sa[d] * idx[d];
      ob -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
  return off;
}

// C[M, N] (row-major) = A[M, K] @ B[K, N] for rows [r0, r1) with any strides. Integers accumulate
// in the unsigned type, so overflow wraps (defined) like PyTorch's results.
template <class T, bool = std::is_integral_v<T>>
struct AccOf {
  using type = T;
};
template <class T>
struct AccOf<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <class T>
void gemm_rows(const T* A, int64_t sam, int64_t sak, const T* B, int64_t sbk, int64_t sbn, T* C,
               int64_t N, int64_t K, int64_t r0, int64_t r1) {
  using Acc = typename AccOf<T>::type;
  constexpr int64_t kBlockN = 256;  // a block of the output row stays in registers / L1
  Acc acc[kBlockN];
  for (int64_t i = r0; i < r1; ++i) {
    for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
      const int64_t nj = std::min(kBlockN, N - j0);
      std::fill(acc, acc + nj, Acc(0));
      for (int64_t k = 0; k < K; ++k) {
        const Acc aik = static_cast<Acc>(A[i * sam + k * sak]);
        const T* brow = B + k * sbk + j0 * sbn;
        if (sbn == 1) {
          for (int64_t j = 0; j < nj; ++j) acc[j] += aik * static_cast<Acc>(brow[j]);
        } else {
          for (int64_t j = 0; j < nj; ++j) acc[j] += aik * static_cast<Acc>(brow[j * sbn]);
        }
      }
      T* crow = C + i * N + j0;
      for (int64_t j = 0; j < nj; ++j) crow[j] = static_cast<T>(acc[j]);
    }
  }
}

void matmul_eager(const OpCall& c, const Tensor& out) {
  Tensor a = c.inputs[0];
  Tensor b = c.inputs[1];
  const TensorImpl* o = out.impl();
  const DType dt = o->dtype();
  const int64_t M = o->sizes()[o->dim() - 2];
  const int64_t N = o->sizes()[o->dim() - 1];
  const int64_t K = a.impl()->sizes()[a.impl()->dim() - 1];
  if (K == 0) {  // an empty sum: zeros
    std::memset(o->data(), 0, static_cast<size_t>(o->numel()) * itemsize(dt));
    return;
  }
  auto last2 = [](const Tensor& t, int64_t& sr, int64_t& sc) {
    const TensorImpl* i = t.impl();
    sr = i->strides()[i->dim() - 2];
    sc = i->strides()[i->dim() - 1];
  };
  bool use_blas = is_floating(dt) && fits_int(M) && fits_int(N) && fits_int(K);
  int64_t sam, sak, sbk, sbn;
  blas::Layout la, lb;
  if (use_blas) {
    last2(a, sam, sak);
    la = blas::layout(M, K, sam, sak);
    if (!la.ok || !fits_int(la.ld)) {
      a = eager_contiguous(a);
      la = blas::layout(M, K, K, 1);
    }
    last2(b, sbk, sbn);
    lb = blas::layout(K, N, sbk, sbn);
    if (!lb.ok || !fits_int(lb.ld)) {
      b = eager_contiguous(b);
      lb = blas::layout(K, N, N, 1);
    }
  }
  last2(a, sam, sak);
  last2(b, sbk, sbn);
  const BatchOffsets off = batch_offsets(a.impl(), b.impl(), o->sizes());
  const int64_t batches = static_cast<int64_t>(off.a.size());

  visit_dtype(dt, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bool>) {
      fail("matmul: not supported for Bool tensors");
    } else {
      const T* A = static_cast<const T*>(a.impl()->data());
      const T* B = static_cast<const T*>(b.impl()->data());
      T* C = static_cast<T*>(o->data());
      if constexpr (std::is_floating_point_v<T>) {
        if (use_blas) {
          auto gemm = [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i)
              blas::gemm<T>(la, lb, M, N, K, A + off.a[i], B + off.b[i], C + i * M * N);
          };
          // A 2-D product: row blocks, column blocks or one call (blas::gemm_2d), the very
          // calls the JIT's BLAS step makes, so eager and jit give the same bits on any CPU
          // (OpenBLAS's bits for a block need not be the whole product's).
          if (batches == 1 && blas::gemm_2d(a.impl(), b.impl(), out.impl())) return;
          if (batches > 1 && blas::split_batches(M, N, K)) {
            // A batch of small products: one BLAS thread each, the batch split over kiln's
            // threads, each task holding at least a row block's kGemmSplitMinMnk multiply-adds
            // (a TBB task costs microseconds; an OpenBLAS thread's wake-up, what
            // kFlopsPerThread is about, milliseconds). Until 2026-12-02 the grain was
            // kFlopsPerThread: attention's 64 products of 512x512x64 made 4 tasks, 4 of 16
            // threads busy on the GPU host's CPU (kiln-step-floor: 175 GFLOP/s; 618 since).
            const double macs = double(M) * double(N) * double(K);
            const auto grain = static_cast<int64_t>(
                std::ceil(static_cast<double>(blas::kGemmSplitMinMnk) / std::max(macs, 1.0)));
            blas::set_threads(1);
            parallel_for(0, batches, std::max<int64_t>(1, grain), gemm);
            return;
          }
          if constexpr (std::is_same_v<T, float>) {
            for (int64_t i = 0; i < batches; ++i)
              blas::gemm_threaded(la, lb, M, N, K, A + off.a[i], B + off.b[i], C + i * M * N);
            return;
          }
          blas::set_threads(blas::threads_for(M, N, K));
          gemm(0, batches);
          return;
        }
      }
      // Rows of all batches form one parallel range; the grain keeps ~32K multiply-adds a task.
      const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, N * K));
      parallel_for(0, batches * M, grain, [&](int64_t r0, int64_t r1) {
        while (r0 < r1) {
          const int64_t bi = r0 / M;
          const int64_t end = std::min(r1, (bi + 1) * M);
          gemm_rows<T>(A + off.a[bi], sam, sak, B + off.b[bi], sbk, sbn, C + bi * M * N, N, K,
                       r0 - bi * M, end - bi * M);
          r0 = end;
        }
      });
    }
  });
}

// True when the rows of a [B.., M, K] tensor lie at one stride apart (unit stride along K): a
// contiguous tensor, or a slice of one along K (row stride > K, BLAS's lda). It then views as one
// [B*..*M, K] matrix without a copy.
bool rows_fold(const Tensor& a) {
  const TensorImpl* x = a.impl();
  const int64_t d = x->dim();
  if (x->sizes()[d - 1] != 1 && x->strides()[d - 1] != 1) return false;
  int64_t expected = -1;  // the stride the next non-1 row dim must have
  for (int64_t i = d - 2; i >= 0; --i) {
    if (x->sizes()[i] == 1) continue;
    if (expected >= 0 && x->strides()[i] != expected) return false;
    expected = x->strides()[i] * x->sizes()[i];
  }
  return true;
}

Tensor matmul_prim(const Tensor& a, const Tensor& b) {
  const Tensor in[] = {a, b};
  return dispatch(OpId::Matmul, in, Attrs{});
}

}  // namespace

void register_matmul_ops() {
  register_op(OpId::Matmul, {"matmul", matmul_meta, matmul_eager, kNoFlags});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", a, b);
  const int64_t da = a.dim(), db = b.dim();
  KILN_CHECK(da >= 1 && db >= 1, "matmul: both arguments need at least 1 dimension, got {} and {}",
             describe(a), describe(b));
  check_inner("matmul", a, b);
  if (da == 1 && db == 1) return matmul_prim(a.unsqueeze(0), b.unsqueeze(1)).view(IntList{});
  if (da == 1) return matmul_prim(a.unsqueeze(0), b).squeeze(-2);
  if (db == 1) return matmul_prim(a, b.unsqueeze(1)).squeeze(-1);
  if (da >= 3 && db == 2 && rows_fold(a)) {
    // [B.., M, K] @ [K, N]: one gemm over all rows instead of one per batch.
    Shape sizes = a.sizes();
    const int64_t K = sizes.back();
    int64_t rows = 1;
    for (int64_t d = 0; d < da - 1; ++d) rows *= sizes[d];
    Tensor r = matmul_prim(a.view({rows, K}), b);
    sizes.back() = b.size(1);
    return r.view(sizes);
  }
  return matmul_prim(a, b);
}

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands("mm", a, b);
  KILN_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected 2-D tensors, got {} and {}", describe(a),
             describe(b));
  check_inner("mm", a, b);
  return matmul_prim(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands("bmm", a, b);
  KILN_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D tensors, got {} and {}", describe(a),
             describe(b));
  KILN_CHECK(a.size(0) == b.size(0), "bmm: batch sizes differ: {} and {}", describe(a),
             describe(b));
  check_inner("bmm", a, b);
  return matmul_prim(a, b);
}

Tensor Tensor::matmul(const Tensor& o) const { return kiln::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return kiln::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return kiln::bmm(*this, o); }

}  // namespace kiln
