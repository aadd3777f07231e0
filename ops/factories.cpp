// Factories that fill or copy in data: empty, zeros, ones, full, from_vector, scalar_tensor and
// the *_like forms. (arange, linspace, eye are in ops/ranges.cpp; random ones in ops/random.cpp.)
#include <cstring>

#include "ops/factory_options.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"

namespace kiln {

namespace {
void check_factory(const char* op, IntList shape, const TensorOptions& o) {
  for (int64_t s : shape)
    KILN_CHECK(s >= 0, "{}: negative size {} in shape {}", op, s, shape_str(shape));
  check_shape_size(op, std::span<const int64_t>(shape.begin(), shape.end()), o.dtype());
  check_device_available(op, o.device());
}
}  // namespace

Tensor empty(IntList shape, TensorOptions opts) {
  check_factory("empty", shape, opts);
  return with_grad_option(empty_tensor(shape.dims(), opts.dtype(), opts.device()), opts);
}

Tensor full(IntList shape, const Scalar& value, TensorOptions opts) {
  check_factory("full", shape, opts);
  Attrs a;
  a.dims = shape.dims();
  a.scalars[0] = value;
  // full() without a dtype takes the value's kind, as torch.full does.
  a.dtype = opts.has_dtype()                              ? opts.dtype()
            : value.category() == DTypeCategory::Floating ? DType::Float32
                                                          : value.natural_dtype();
  a.device = opts.device();
  return with_grad_option(dispatch(OpId::Fill, {}, a), opts);
}

// zeros/ones check first so that errors name them rather than full.
Tensor zeros(IntList shape, TensorOptions opts) {
  check_factory("zeros", shape, opts);
  return full(shape, 0, opts.dtype(opts.dtype()));
}
Tensor ones(IntList shape, TensorOptions opts) {
  check_factory("ones", shape, opts);
  return full(shape, 1, opts.dtype(opts.dtype()));
}

// torch.scalar_tensor gives the default float dtype unless told otherwise.
Tensor scalar_tensor(const Scalar& value, TensorOptions opts) {
  return full({}, value, opts.has_dtype() ? opts : opts.dtype(DType::Float32));
}

template <class T>
Tensor from_vector(const std::vector<T>& data, IntList shape, TensorOptions opts) {
  check_factory("from_vector", shape, opts);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  KILN_CHECK(n == static_cast<int64_t>(data.size()),
             "from_vector: {} values do not fill shape {} ({} elements)", data.size(),
             shape_str(shape), n);
  Tensor t = empty_tensor(shape.dims(), dtype_v<T>, Device::cpu());
  if (n > 0) {
    if constexpr (std::is_same_v<T, bool>) {
      bool* out = static_cast<bool*>(t.impl()->data());
      for (int64_t i = 0; i < n; ++i) out[i] = data[i];
    } else {
      std::memcpy(t.impl()->data(), data.data(), n * sizeof(T));
    }
  }
  if (opts.has_dtype()) t = t.to(opts.dtype());
  return with_grad_option(t.to(opts.device()), opts);
}

template Tensor from_vector(const std::vector<bool>&, IntList, TensorOptions);
template Tensor from_vector(const std::vector<int32_t>&, IntList, TensorOptions);
template Tensor from_vector(const std::vector<int64_t>&, IntList, TensorOptions);
template Tensor from_vector(const std::vector<float>&, IntList, TensorOptions);
template Tensor from_vector(const std::vector<double>&, IntList, TensorOptions);

namespace {
// The template tensor of a *_like factory: an undefined one is an error, not a crash.
void check_like(const char* op, const Tensor& t) {
  KILN_CHECK(t.defined(), "{}: the tensor is undefined", op);
}
}  // namespace

Tensor empty_like(const Tensor& t) {
  check_like("empty_like", t);
  return empty(t.impl()->sizes(), t.options());
}
Tensor zeros_like(const Tensor& t) {
  check_like("zeros_like", t);
  return zeros(t.impl()->sizes(), t.options());
}
Tensor ones_like(const Tensor& t) {
  check_like("ones_like", t);
  return ones(t.impl()->sizes(), t.options());
}
Tensor full_like(const Tensor& t, const Scalar& v) {
  check_like("full_like", t);
  return full(t.impl()->sizes(), v, t.options());
}

}  // namespace kiln
