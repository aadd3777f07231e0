#include "jit/cuda/matmul_plan.h"

#include <algorithm>
#include <climits>

namespace kiln::jit::cuda {

namespace {

bool fits_int(int64_t v) { return v <= INT_MAX; }

// Element offsets (from the storage start) of each output product's A and B.
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

}  // namespace

BlasOperand blas_operand(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  // A dim of size 1 has no meaningful stride, so it never disqualifies a layout.
  if ((sc == 1 || cols == 1) && (rows == 1 || sr >= std::max<int64_t>(1, cols)))
    return {true, false, rows == 1 ? std::max<int64_t>(1, cols) : sr};
  if ((sr == 1 || rows == 1) && (cols == 1 || sc >= std::max<int64_t>(1, rows)))
    return {true, true, cols == 1 ? std::max<int64_t>(1, rows) : sc};
  return {};
}

MatmulPlan plan_matmul(const TensorImpl* a, const TensorImpl* b, const DimVector& out_sizes) {
  MatmulPlan p;
  const int64_t rank = static_cast<int64_t>(out_sizes.size());
  p.M = out_sizes[rank - 2];
  p.N = out_sizes[rank - 1];
  p.K = a->sizes()[a->dim() - 1];
  p.blas = is_floating(a->dtype()) && fits_int(p.M) && fits_int(p.N) && fits_int(p.K);
  if (p.blas) {
    p.a = blas_operand(p.M, p.K, a->strides()[a->dim() - 2], a->strides()[a->dim() - 1]);
    p.b = blas_operand(p.K, p.N, b->strides()[b->dim() - 2], b->strides()[b->dim() - 1]);
    p.copy_a = !p.a.ok || !fits_int(p.a.ld);
    p.copy_b = !p.b.ok || !fits_int(p.b.ld);
    if (p.copy_a || p.copy_b) return p;  // the caller copies and plans again
  }
  std::vector<int64_t> oa, ob;
  batch_offsets(a, b, out_sizes, oa, ob);
  if (p.M == 0 || p.N == 0) oa.clear();  // nothing to compute
  const size_t n = oa.size();
  for (size_t i = 0; i < n;) {
    GemmRun r;
    r.first = static_cast<int64_t>(i);
    r.a_offset = oa[i];
    r.b_offset = ob[i];
    if (i + 1 < n && oa[i + 1] >= oa[i] && ob[i + 1] >= ob[i]) {
      r.step_a = oa[i + 1] - oa[i];
      r.step_b = ob[i + 1] - ob[i];
      r.count = 2;
      while (i + size_t(r.count) < n && r.count < INT_MAX &&
             oa[i + r.count] - oa[i + r.count - 1] == r.step_a &&
             ob[i + r.count] - ob[i + r.count - 1] == r.step_b)
        ++r.count;
    }
    p.runs.push_back(r);
    i += static_cast<size_t>(r.count);
  }
  return p;
}

}  // namespace kiln::jit::cuda
