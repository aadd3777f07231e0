// Random factories: rand, randn, randint (+ rand_like, randn_like). Primitives flagged kIsRandom.
// The public functions read the seed and reserve the Philox counters at dispatch time and store
// both in the attrs, so a recorded op replays the same numbers and the kernels are pure functions
// of their attrs (docs/random.md).
// Attrs (all three): dims = shape, dtype, device, ints[0] = seed (uint64 bits),
//   ints[1] = first Philox counter (off), ints[2] = numel (counters reserved).
//   Randint also: scalars[0] = low, scalars[1] = high (integral).
#include <bit>

#include "ops/factory_options.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/random.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

// Philox costs ~10x a memory-bound op per element: split earlier than kParallelGrain.
constexpr int64_t kRandomGrain = 4096;

const char* random_name(OpId id) {
  return id == OpId::Rand ? "rand" : id == OpId::Randn ? "randn" : "randint";
}

int64_t checked_numel(const char* op, const DimVector& shape) {
  for (int64_t s : shape)
    KILN_CHECK(s >= 0, "{}: negative size {} in shape {}", op, s, shape_str(shape));
  check_shape_size(op, shape, DType::Bool, /*bytes_too=*/false);  // bytes: the dispatcher checks
  return numel_of(shape);
}

// All validation of one random op (shared by the public functions, which must validate before
// reserving counters, and the meta function, which must validate in every mode).
void validate(OpId id, const Attrs& a) {
  const char* op = random_name(id);
  checked_numel(op, a.dims);
  check_device_available(op, a.device);
  if (id != OpId::Randint) {
    KILN_CHECK(is_floating(a.dtype), "{}: expected a floating dtype (Float32 or Float64), got {}",
               op, a.dtype);
    return;
  }
  int64_t low = a.scalars[0].to_int(), high = a.scalars[1].to_int();
  KILN_CHECK(high > low, "randint: expected low < high, got low={} high={}", low, high);
  // Every value in [low, high) must be representable (exactly, for floats), as torch checks.
  int64_t lo_lim = 0, hi_lim = 0;
  switch (a.dtype) {
    case DType::Bool:
      lo_lim = 0, hi_lim = 1;
      break;
    case DType::Int32:
      lo_lim = INT32_MIN, hi_lim = INT32_MAX;
      break;
    case DType::Int64:
      lo_lim = INT64_MIN, hi_lim = INT64_MAX;
      break;
    case DType::Float32:
      lo_lim = -(int64_t(1) << 24), hi_lim = int64_t(1) << 24;
      break;
    case DType::Float64:
      lo_lim = -(int64_t(1) << 53), hi_lim = int64_t(1) << 53;
      break;
  }
  KILN_CHECK(low >= lo_lim && high - 1 <= hi_lim,
             "randint: range [{}, {}) is out of bounds for dtype {} (values must lie in [{}, {}])",
             low, high, a.dtype, lo_lim, hi_lim);
}

void random_meta(const OpCall& c, OutputMeta& m) {
  validate(c.op, c.attrs);
  m.sizes = c.attrs.dims;
  m.dtype = c.attrs.dtype;
  m.device = c.attrs.device;
}

void random_eager(const OpCall& c, const Tensor& out) {
  const uint64_t seed = std::bit_cast<uint64_t>(c.attrs.ints[0]);
  const uint64_t off = std::bit_cast<uint64_t>(c.attrs.ints[1]);
  const int64_t n = out.impl()->numel();
  const OpId id = c.op;
  visit_dtype(out.impl()->dtype(), [&]<class T>(TypeTag<T>) {
    T* o = static_cast<T*>(out.impl()->data());
    if constexpr (std::is_floating_point_v<T>) {
      if (id == OpId::Rand) {
        parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
          for_each_uniform<T>(seed, off, b, e, [&](int64_t i, T u) { o[i] = u; });
        });
        return;
      }
      if (id == OpId::Randn) {
        parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) o[i] = random_normal<T>(seed, off + i);
        });
        return;
      }
    }
    const int64_t low = c.attrs.scalars[0].to_int();
    const uint64_t range =
        static_cast<uint64_t>(c.attrs.scalars[1].to_int()) - static_cast<uint64_t>(low);
    parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(random_int(seed, off + i, low, range));
    });
  });
}

// Validates, then reads the seed and reserves the counters (in this order, so a rejected call
// consumes nothing), then dispatches.
Tensor dispatch_random(OpId id, Attrs& a) {
  validate(id, a);
  int64_t n = numel_of(a.dims);
  a.ints[0] = std::bit_cast<int64_t>(current_seed());
  a.ints[1] = std::bit_cast<int64_t>(reserve_philox_offsets(static_cast<uint64_t>(n)));
  a.ints[2] = n;
  return dispatch(id, {}, a);
}

Attrs random_attrs(IntList shape, DType dtype, Device device) {
  Attrs a;
  a.dims = shape.dims();
  a.dtype = dtype;
  a.device = device;
  return a;
}

}  // namespace

void register_random_ops() {
  register_op(OpId::Rand, {"rand", random_meta, random_eager, kIsRandom});
  register_op(OpId::Randn, {"randn", random_meta, random_eager, kIsRandom});
  register_op(OpId::Randint, {"randint", random_meta, random_eager, kIsRandom});
}

Tensor rand(IntList shape, TensorOptions opts) {
  Attrs a = random_attrs(shape, opts.dtype(), opts.device());
  return with_grad_option(dispatch_random(OpId::Rand, a), opts);
}

Tensor randn(IntList shape, TensorOptions opts) {
  Attrs a = random_attrs(shape, opts.dtype(), opts.device());
  return with_grad_option(dispatch_random(OpId::Randn, a), opts);
}

Tensor randint(int64_t low, int64_t high, IntList shape, TensorOptions opts) {
  Attrs a = random_attrs(shape, opts.has_dtype() ? opts.dtype() : DType::Int64, opts.device());
  a.scalars = {Scalar(low), Scalar(high)};
  return with_grad_option(dispatch_random(OpId::Randint, a), opts);
}

Tensor rand_like(const Tensor& t) {
  KILN_CHECK(t.defined(), "rand_like: the tensor is undefined");
  return rand(t.impl()->sizes(), t.options());
}

Tensor randn_like(const Tensor& t) {
  KILN_CHECK(t.defined(), "randn_like: the tensor is undefined");
  return randn(t.impl()->sizes(), t.options());
}

}  // namespace kiln
