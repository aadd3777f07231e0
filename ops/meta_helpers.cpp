#include "ops/meta_helpers.h"

#include <cmath>
#include <limits>

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

void ResultType::add(const Tensor& t) { add(t.impl()->dtype(), t.impl()->dim() == 0); }

void ResultType::add(DType d, bool zero_dim) {
  if (!zero_dim) {
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

void check_scalar_fits(const char* op, const char* what, const Scalar& v, DType d) {
  auto fail_range = [&](const auto& shown) {
    fail("{}: {} {} cannot be converted to {} without overflow", op, what, shown, d);
  };
  auto check_int = [&](int64_t lo, int64_t hi) {
    if (v.is_floating()) {
      const double f = v.to_double();
      // [lo, hi + 1) in doubles: hi + 1 is a power of two, exact where hi itself may not be.
      if (!(f >= static_cast<double>(lo) && f < static_cast<double>(hi) + 1.0)) fail_range(f);
    } else if (v.category() == DTypeCategory::Integral && (v.to_int() < lo || v.to_int() > hi)) {
      fail_range(v.to_int());
    }
  };
  switch (d) {
    case DType::Int32:
      check_int(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      break;
    case DType::Int64:
      check_int(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      break;
    case DType::Float32:
      if (v.is_floating() && std::isfinite(v.to_double()) &&
          std::fabs(v.to_double()) > static_cast<double>(std::numeric_limits<float>::max()))
        fail_range(v.to_double());
      break;
    default:  // Bool takes anything (nonzero is true); Float64 every scalar
      break;
  }
}

}  // namespace kiln
