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
// Attrs equal field by field, their scalars bit for bit (same_bits). Written for the common
// case, where every field is equal (the eager lane asks it for every op it answers: runtime/
// lane_meta_memo.h): branch-free over the words (std::array's == is a memcmp call), dims last
// (mostly empty).
inline bool same_bits(const Attrs& a, const Attrs& b) {
  uint64_t diff = 0;
  for (size_t k = 0; k < a.ints.size(); ++k)
    diff |= static_cast<uint64_t>(a.ints[k]) ^ static_cast<uint64_t>(b.ints[k]);
  for (size_t k = 0; k < a.scalars.size(); ++k)
    diff |= (a.scalars[k].bits() ^ b.scalars[k].bits()) |
            static_cast<uint64_t>(a.scalars[k].category() != b.scalars[k].category());
  return diff == 0 && a.dtype == b.dtype && a.device == b.device && a.dims == b.dims;
}

}  // namespace kiln
