// Range factories: arange, linspace, eye. Each is a primitive with no inputs, so the tracer can
// record it as a node whose attributes say everything (no data is captured).
// Attrs:
//   Arange:   dims = {length}, scalars[0] = start, scalars[1] = step, dtype, device.
//             Values are start + i*step, in int64 when both scalars are integral and the dtype is
//             integral, otherwise in double (then converted to the dtype).
//   Linspace: dims = {steps}, scalars[0] = start, scalars[1] = end (Floating), dtype, device.
//   Eye:      dims = {n, n}, dtype, device.
#include <cmath>
#include <limits>

#include "ops/factory_options.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "ops/random.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

void check_device(const char* op, Device d) { check_device_available(op, d); }

// ---- arange ----

void arange_meta(const OpCall& c, OutputMeta& m) {
  const Attrs& a = c.attrs;
  KILN_CHECK(a.dims.size() == 1 && a.dims[0] >= 0, "arange: invalid length {}", shape_str(a.dims));
  KILN_CHECK(a.dtype != DType::Bool, "arange: not supported for dtype Bool");
  KILN_CHECK(a.scalars[1].to_double() != 0, "arange: step must be nonzero");
  check_device("arange", a.device);
  if (a.dims[0] > 0) {  // the values must fit the dtype (they are monotonic: check both ends)
    check_scalar_fits("arange", "start", a.scalars[0], a.dtype);
    const double last =
        a.scalars[0].to_double() + static_cast<double>(a.dims[0] - 1) * a.scalars[1].to_double();
    check_scalar_fits("arange", "last value", Scalar(last), a.dtype);
  }
  m.sizes = a.dims;
  m.dtype = a.dtype;
  m.device = a.device;
}

void arange_eager(const OpCall& c, const Tensor& out) {
  const Scalar& start = c.attrs.scalars[0];
  const Scalar& step = c.attrs.scalars[1];
  int64_t n = out.impl()->numel();
  bool int_math = is_integral(c.attrs.dtype) && !start.is_floating() && !step.is_floating();
  visit_dtype(c.attrs.dtype, [&]<class T>(TypeTag<T>) {
    T* o = static_cast<T*>(out.impl()->data());
    parallel_for(0, n, kParallelGrain, [&](int64_t b, int64_t e) {
      if (int_math) {
        int64_t s0 = start.to_int(), st = step.to_int();
        for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(s0 + i * st);
      } else {
        double s0 = start.to_double(), st = step.to_double();
        for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(s0 + static_cast<double>(i) * st);
      }
    });
  });
}

// The number of elements of arange(start, end, step), validated as torch does.
int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step) {
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  KILN_CHECK(std::isfinite(s) && std::isfinite(e),
             "arange: unsupported range: {} -> {} (bounds must be finite)", s, e);
  KILN_CHECK(std::isfinite(st) && st != 0, "arange: step must be nonzero and finite, got {}", st);
  KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
             "arange: upper bound and lower bound inconsistent with step sign (start {}, end {}, "
             "step {})",
             s, e, st);
  if (!start.is_floating() && !end.is_floating() && !step.is_floating()) {
    // Exact integer ceil((end - start) / step) without overflow.
    __int128 diff = static_cast<__int128>(end.to_int()) - start.to_int();
    __int128 stp = step.to_int();
    __int128 len = (diff + stp - (stp > 0 ? 1 : -1)) / stp;
    KILN_CHECK(len <= std::numeric_limits<int64_t>::max(), "arange: too many elements");
    return static_cast<int64_t>(len);
  }
  double len = std::ceil((e - s) / st);
  KILN_CHECK(len < 9.2e18, "arange: too many elements ({} to {} by {})", s, e, st);
  return static_cast<int64_t>(len);
}

// ---- linspace ----

void linspace_meta(const OpCall& c, OutputMeta& m) {
  const Attrs& a = c.attrs;
  KILN_CHECK(a.dims.size() == 1 && a.dims[0] >= 0,
             "linspace: number of steps must be non-negative, got {}",
             a.dims.empty() ? -1 : a.dims[0]);
  KILN_CHECK(a.dtype != DType::Bool, "linspace: not supported for dtype Bool");
  check_device("linspace", a.device);
  if (a.dims[0] > 0) {
    check_scalar_fits("linspace", "start", a.scalars[0], a.dtype);
    check_scalar_fits("linspace", "end", a.scalars[1], a.dtype);
  }
  m.sizes = a.dims;
  m.dtype = a.dtype;
  m.device = a.device;
}

// torch's formula: the first half counts up from start, the second half down from end, so both
// endpoints are exact. Floats compute in their own type; integers compute the step in double.
void linspace_eager(const OpCall& c, const Tensor& out) {
  int64_t steps = out.impl()->numel();
  visit_dtype(c.attrs.dtype, [&]<class T>(TypeTag<T>) {
    using S = std::conditional_t<std::is_floating_point_v<T>, T, double>;
    T* o = static_cast<T*>(out.impl()->data());
    const T start = c.attrs.scalars[0].to<T>(), end = c.attrs.scalars[1].to<T>();
    if (steps == 1) {
      o[0] = start;
      return;
    }
    const S step = (static_cast<S>(end) - static_cast<S>(start)) / static_cast<S>(steps - 1);
    const int64_t half = steps / 2;
    parallel_for(0, steps, kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        o[i] = i < half ? static_cast<T>(start + step * static_cast<S>(i))
                        : static_cast<T>(end - step * static_cast<S>(steps - 1 - i));
      }
    });
  });
}

// ---- eye ----

void eye_meta(const OpCall& c, OutputMeta& m) {
  const Attrs& a = c.attrs;
  KILN_CHECK(a.dims.size() == 2 && a.dims[0] >= 0 && a.dims[1] >= 0,
             "eye: n must be non-negative, got {}", a.dims.empty() ? -1 : a.dims[0]);
  check_device("eye", a.device);
  m.sizes = a.dims;
  m.dtype = a.dtype;
  m.device = a.device;
}

void eye_eager(const OpCall& c, const Tensor& out) {
  int64_t rows = c.attrs.dims[0], cols = c.attrs.dims[1];
  visit_dtype(c.attrs.dtype, [&]<class T>(TypeTag<T>) {
    T* o = static_cast<T*>(out.impl()->data());
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(cols, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) {
                     T* row = o + r * cols;
                     for (int64_t j = 0; j < cols; ++j) row[j] = T(0);
                     if (r < cols) row[r] = T(1);
                   }
                 });
  });
}

}  // namespace

void register_factory_ops() {
  register_op(OpId::Arange, {"arange", arange_meta, arange_eager, kNoFlags});
  register_op(OpId::Linspace, {"linspace", linspace_meta, linspace_eager, kNoFlags});
  register_op(OpId::Eye, {"eye", eye_meta, eye_eager, kNoFlags});
  register_random_ops();
}

Tensor arange(const Scalar& end, TensorOptions opts) { return arange(0, end, 1, opts); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  KILN_CHECK(start.category() != DTypeCategory::Bool && end.category() != DTypeCategory::Bool &&
                 step.category() != DTypeCategory::Bool,
             "arange: bounds and step must be numbers, not bools");
  Attrs a;
  a.dims = {arange_length(start, end, step)};
  a.scalars = {start, step};
  bool any_float = start.is_floating() || end.is_floating() || step.is_floating();
  a.dtype = opts.has_dtype() ? opts.dtype() : (any_float ? DType::Float32 : DType::Int64);
  a.device = opts.device();
  return with_grad_option(dispatch(OpId::Arange, {}, a), opts);
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions opts) {
  KILN_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got {}", steps);
  Attrs a;
  a.dims = {steps};
  a.scalars = {Scalar(start), Scalar(end)};
  a.dtype = opts.dtype();  // Float32 unless set
  a.device = opts.device();
  return with_grad_option(dispatch(OpId::Linspace, {}, a), opts);
}

Tensor eye(int64_t n, TensorOptions opts) {
  KILN_CHECK(n >= 0, "eye: n must be non-negative, got {}", n);
  Attrs a;
  a.dims = {n, n};
  a.dtype = opts.dtype();
  a.device = opts.device();
  return with_grad_option(dispatch(OpId::Eye, {}, a), opts);
}

}  // namespace kiln
