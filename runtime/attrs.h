// Attrs: the non-tensor arguments of one op call, in a fixed small layout (no heap for the common
// case, cheap to hash and compare when the tracer keys regions on them). Each op documents in ops/
// which fields it uses.
#pragma once
#include <array>
#include <cstdint>

#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/scalar.h"
#include "runtime/small_vector.h"

namespace kiln {

struct Attrs {
  DimVector dims;                   // a shape, a dims list or a permutation
  std::array<Scalar, 2> scalars{};  // numbers: alpha, fill value, bounds, exponent
  std::array<int64_t, 4> ints{};    // small integer arguments: dim, keepdim, flags, counts
  DType dtype = DType::Float32;     // requested output dtype (factories, casts)
  Device device = Device::cpu();    // requested output device (factories)

  friend bool operator==(const Attrs& a, const Attrs& b) {
    return a.dims == b.dims && a.scalars == b.scalars && a.ints == b.ints && a.dtype == b.dtype &&
           a.device == b.device;
  }
};

}  // namespace kiln
