// Scalar: a number passed to an op (x + 2, x * 0.5). It remembers whether it was written as a
// bool, an integer or a floating-point number, because PyTorch's promotion depends on it:
// int_tensor + 2 stays integral, int_tensor + 2.0 becomes Float32.
#pragma once
#include <bit>
#include <cstdint>
#include <type_traits>

#include "runtime/dtype.h"

namespace kiln {

class Scalar {
 public:
  constexpr Scalar() : i_(0), cat_(DTypeCategory::Integral) {}
  constexpr Scalar(bool b) : i_(b), cat_(DTypeCategory::Bool) {}
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) constexpr Scalar(T v)
      : i_(static_cast<int64_t>(v)), cat_(DTypeCategory::Integral) {}
  template <class T>
  requires std::is_floating_point_v<T>
  constexpr Scalar(T v) : d_(static_cast<double>(v)), cat_(DTypeCategory::Floating) {}

  constexpr DTypeCategory category() const { return cat_; }
  constexpr bool is_floating() const { return cat_ == DTypeCategory::Floating; }
  constexpr double to_double() const { return is_floating() ? d_ : static_cast<double>(i_); }
  constexpr int64_t to_int() const { return is_floating() ? static_cast<int64_t>(d_) : i_; }
  template <class T>
  constexpr T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return is_floating() ? d_ != 0 : i_ != 0;
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(to_double());
    else
      return is_floating() ? static_cast<T>(d_) : static_cast<T>(i_);
  }
  // The dtype a scalar has on its own: Bool, Int64 or Float64 (used where no tensor decides).
  constexpr DType natural_dtype() const {
    return cat_ == DTypeCategory::Bool
               ? DType::Bool
               : (cat_ == DTypeCategory::Integral ? DType::Int64 : DType::Float64);
  }

  // The payload's bits (the double's for a floating scalar): with category(), what tells two
  // scalars apart bit for bit (same_bits in runtime/attrs.h).
  constexpr uint64_t bits() const {
    return is_floating() ? std::bit_cast<uint64_t>(d_) : static_cast<uint64_t>(i_);
  }

  friend constexpr bool operator==(const Scalar& a, const Scalar& b) {
    return a.cat_ == b.cat_ && (a.is_floating() ? a.d_ == b.d_ : a.i_ == b.i_);
  }

 private:
  union {
    int64_t i_;
    double d_;
  };
  DTypeCategory cat_;
};

}  // namespace kiln
