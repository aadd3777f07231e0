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

// Whether two scalars are the same number of the same category, bit for bit (-0.0 differs from
// 0.0, a NaN equals only the same NaN): where a result computed with one is reused for the other.
inline bool same_bits(const Scalar& a, const Scalar& b) {
  return a.category() == b.category() && a.bits() == b.bits();
}
// Attrs equal field by field, their scalars bit for bit (same_bits).
inline bool same_bits(const Attrs& a, const Attrs& b) {
  if (a.dims != b.dims || a.ints != b.ints || a.dtype != b.dtype || a.device != b.device)
    return false;
  for (size_t k = 0; k < a.scalars.size(); ++k)
    if (!same_bits(a.scalars[k], b.scalars[k])) return false;
  return true;
}

}  // namespace kiln
