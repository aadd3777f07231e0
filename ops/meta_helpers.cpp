#include "ops/meta_helpers.h"

#include <fmt/format.h>

namespace kiln {

std::string describe(const Tensor& t) {
  return fmt::format("{} {}", shape_str(t.impl()->sizes()), t.impl()->dtype());
}

int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim) {
  int64_t n = ndim == 0 ? 1 : ndim;
  KILN_CHECK(dim >= -n && dim < n,
             "{}: dim {} is out of range for a tensor of {} dims (expected a dim in [{}, {}])", op,
             dim, ndim, -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

uint64_t dims_mask(const char* op, IntList dims, int64_t ndim) {
  KILN_CHECK(ndim <= 64, "{}: tensors of more than 64 dims are not supported", op);
  if (dims.empty()) return ndim == 64 ? ~0ull : ((1ull << ndim) - 1);
  uint64_t mask = 0;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(op, d, ndim);
    if (ndim == 0) continue;
    KILN_CHECK(!(mask & (1ull << w)), "{}: dim {} appears more than once in the dims list {}", op,
               w, shape_str(dims));
    mask |= 1ull << w;
  }
  return mask;
}

DimVector broadcast_shapes(const char* op, const DimVector& a, const DimVector& b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_CHECK(da == db || da == 1 || db == 1,
               "{}: shapes {} and {} cannot be broadcast together (dim {}: {} vs {})", op,
               shape_str(a), shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DimVector broadcast_all(const char* op, std::span<const Tensor> ts) {
  DimVector out = ts[0].impl()->sizes();
  for (size_t i = 1; i < ts.size(); ++i) out = broadcast_shapes(op, out, ts[i].impl()->sizes());
  return out;
}

void ResultType::add(const Tensor& t) {
  DType d = t.impl()->dtype();
  if (t.impl()->dim() > 0) {
    dim_ = merge(dim_, has_dim_, d);
    has_dim_ = true;
  } else {
    zero_ = merge(zero_, has_zero_, d);
    has_zero_ = true;
  }
}

void ResultType::add(const Scalar& s) {
  // A scalar counts with the default dtype of its category.
  DType d = s.category() == DTypeCategory::Floating
                ? DType::Float32
                : (s.category() == DTypeCategory::Integral ? DType::Int64 : DType::Bool);
  scalar_ = merge(scalar_, has_scalar_, d);
  has_scalar_ = true;
}

// c10's combine_categories: the higher-priority dtype wins unless it is Bool, or the lower one is
// floating while it is not; then the two are promoted.
static DType combine(bool has_hi, DType hi, bool has_lo, DType lo) {
  if (!has_hi) return lo;
  if (!has_lo || is_floating(hi)) return hi;
  if (hi == DType::Bool || is_floating(lo)) return promote_types(hi, lo);
  return hi;
}

DType ResultType::get() const {
  DType lower = combine(has_zero_, zero_, has_scalar_, scalar_);
  return combine(has_dim_, dim_, has_zero_ || has_scalar_, lower);
}

Device common_device(const char* op, std::span<const Tensor> ts) {
  Device d = ts[0].impl()->device();
  for (const Tensor& t : ts) {
    KILN_CHECK(t.impl()->device() == d, "{}: expected all tensors on one device, got {} and {}", op,
               d, t.impl()->device());
  }
  return d;
}

}  // namespace kiln
