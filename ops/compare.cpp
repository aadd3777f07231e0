// Whole-tensor comparisons returning a bool: allclose (broadcasting, |a-b| <= atol + rtol*|b|)
// and equal (same shape, equal values). Both compare in the promoted dtype of the two inputs
// with a direct parallel loop: they are sync points that produce a host bool, not ops.
#include <atomic>
#include <cmath>

#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "runtime/lazy.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

// Calls pred(x, y) on corresponding elements of a and b (same shape) converted to their promoted
// dtype; true when it holds for every element. Stops early (per chunk) on the first failure.
template <class Pred>
bool all_pairs(const Tensor& a, const Tensor& b, const Pred& pred) {
  DType dt = promote_types(a.impl()->dtype(), b.impl()->dtype());
  // Device tensors are compared from host copies (the loop below reads memory on the host).
  Tensor x = a.to(dt).contiguous().to(Device::cpu()), y = b.to(dt).contiguous().to(Device::cpu());
  sync_point(x, SyncReason::Compare);
  sync_point(y, SyncReason::Compare);
  int64_t n = x.impl()->numel();
  std::atomic<bool> ok{true};
  visit_dtype(dt, [&]<class T>(TypeTag<T>) {
    const T* px = static_cast<const T*>(x.impl()->data());
    const T* py = static_cast<const T*>(y.impl()->data());
    parallel_for(0, n, kParallelGrain, [&](int64_t b0, int64_t e) {
      if (!ok.load(std::memory_order_relaxed)) return;
      for (int64_t i = b0; i < e; ++i) {
        if (!pred(px[i], py[i])) {
          ok.store(false, std::memory_order_relaxed);
          return;
        }
      }
    });
  });
  return ok.load();
}

void check_defined(const char* op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "{}: an input tensor is undefined", op);
  KILN_CHECK(a.impl()->device() == b.impl()->device(), "{}: inputs are on {} and {}", op,
             a.impl()->device(), b.impl()->device());
}

}  // namespace

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  check_defined("allclose", a, b);
  KILN_CHECK(rtol >= 0 && atol >= 0,
             "allclose: rtol and atol must be non-negative, got rtol={} atol={}", rtol, atol);
  DimVector shape = broadcast_shapes("allclose", a.impl()->sizes(), b.impl()->sizes());
  Tensor x = a.expand(shape), y = b.expand(shape);
  return all_pairs(x, y, [&]<class T>(T u, T v) {
    if (u == v) return true;  // exact, and inf == inf of the same sign
    double du = static_cast<double>(u), dv = static_cast<double>(v);
    if (!std::isfinite(du) || !std::isfinite(dv)) return false;  // NaN, or inf vs other
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // |u - v| exactly (as unsigned), then compared in double.
      uint64_t diff = u > v ? uint64_t(u) - uint64_t(v) : uint64_t(v) - uint64_t(u);
      return static_cast<double>(diff) <= atol + rtol * std::fabs(dv);
    } else {
      return std::fabs(du - dv) <= atol + rtol * std::fabs(dv);
    }
  });
}

bool equal(const Tensor& a, const Tensor& b) {
  check_defined("equal", a, b);
  if (a.impl()->sizes() != b.impl()->sizes()) return false;
  return all_pairs(a, b, []<class T>(T u, T v) { return u == v; });
}

}  // namespace kiln
