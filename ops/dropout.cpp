// dropout: a random primitive (OpId::Dropout, flag kIsRandom).
// Attrs: scalars[0] = p; ints[0] = Philox seed (the uint64 bit pattern); ints[1] = first counter.
//
// The random rule (the contract every backend must reproduce; docs/random.md refers here):
//   dropout(x, p, train) with train && 0 < p < 1 reserves x.numel() Philox counters with
//   reserve_philox_offsets(x.numel()) when the op is called, giving `offset`, and takes
//   seed = current_seed(). Element i of x in row-major order (whatever x's strides) draws
//   r = Philox::draw(seed, offset + i) and
//     Float32: u = Philox::uniform_float(r[0])
//     Float64: u = Philox::uniform_double(r[0], r[1])
//   It is kept iff u >= p (compared in double), and then y[i] = x[i] * scale with
//   scale = T(1 / (1 - p)) (computed in double, rounded to the element type); else
//   y[i] = x[i] * 0 (as libtorch: NaN for NaN or infinity, -0 for a negative x).
//   !train or p == 0 returns x itself and p == 1 returns x * 0.0; neither consumes counters.
//   p outside [0, 1] is an error, train or not. Only Float32/Float64 inputs are accepted.
// Seed and offset travel in the attrs, so replaying the call (tracer, JIT) draws the same mask.
#include <bit>

#include "ops/eager_helpers.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/nn_registry.h"
#include "ops/random.h"
#include "runtime/parallel.h"
#include "runtime/philox.h"

namespace kiln {

namespace {

void check_p(double p) {
  KILN_CHECK(p >= 0.0 && p <= 1.0, "dropout: probability has to be between 0 and 1, but got {}", p);
}

void dropout_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& xt = c.inputs[0];
  const TensorImpl* x = xt.impl();
  check_p(c.attrs.scalars[0].to_double());
  KILN_CHECK(is_floating(x->dtype()), "dropout: expected a Float32 or Float64 input, got {}",
             describe(xt));
  m.sizes = x->sizes();
  m.dtype = x->dtype();
  m.device = x->device();
}

void dropout_eager(const OpCall& c, const Tensor& out) {
  const Tensor x = eager_contiguous(c.inputs[0]);
  const TensorImpl* o = out.impl();
  const double p = c.attrs.scalars[0].to_double();
  const uint64_t seed = std::bit_cast<uint64_t>(c.attrs.ints[0]);
  const uint64_t offset = std::bit_cast<uint64_t>(c.attrs.ints[1]);
  visit_dtype(o->dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = static_cast<const T*>(x.impl()->data());
      T* yp = static_cast<T*>(o->data());
      const T scale = static_cast<T>(1.0 / (1.0 - p));
      parallel_for(0, o->numel(), kParallelGrain / 8, [&](int64_t b, int64_t e) {
        for_each_uniform<T>(seed, offset, b, e, [&](int64_t i, T u) {
          yp[i] = static_cast<double>(u) >= p ? xp[i] * scale : xp[i] * T(0);
        });
      });
    } else {
      fail("dropout: internal error: non-float dtype {}", o->dtype());
    }
  });
}

}  // namespace

void register_dropout_ops() {
  register_op(OpId::Dropout, {"dropout", dropout_meta, dropout_eager, kIsRandom});
}

Tensor dropout(const Tensor& x, double p, bool train) {
  check_p(p);
  KILN_CHECK(x.defined(), "dropout: the input tensor is undefined");
  KILN_CHECK(is_floating(x.dtype()), "dropout: expected a Float32 or Float64 input, got {}",
             describe(x));
  if (!train || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;
  Attrs a;
  a.scalars[0] = p;
  a.ints[0] = std::bit_cast<int64_t>(current_seed());
  a.ints[1] = std::bit_cast<int64_t>(reserve_philox_offsets(static_cast<uint64_t>(x.numel())));
  const Tensor in[] = {x};
  return dispatch(OpId::Dropout, in, a);
}

}  // namespace kiln
