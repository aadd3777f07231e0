// DType: the element types kiln stores, their sizes and PyTorch's promotion lattice.
#pragma once
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kiln {

enum class DType : uint8_t { Bool, Int32, Int64, Float32, Float64 };
inline constexpr int kNumDTypes = 5;

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

constexpr size_t itemsize(DType t) {
  constexpr size_t sizes[] = {1, 4, 8, 4, 8};
  return sizes[static_cast<int>(t)];
}
constexpr std::string_view dtype_name(DType t) {
  constexpr std::string_view names[] = {"Bool", "Int32", "Int64", "Float32", "Float64"};
  return names[static_cast<int>(t)];
}
constexpr bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64; }
constexpr bool is_integral(DType t) { return t == DType::Int32 || t == DType::Int64; }

// The three promotion categories of PyTorch: bool < integer < floating.
enum class DTypeCategory : uint8_t { Bool, Integral, Floating };
constexpr DTypeCategory category(DType t) {
  return t == DType::Bool ? DTypeCategory::Bool
                          : (is_floating(t) ? DTypeCategory::Floating : DTypeCategory::Integral);
}

// Promotion of two tensor dtypes of equal priority: the larger of the two in the lattice
// Bool < Int32 < Int64 < Float32 < Float64 (exactly torch.promote_types on these five).
constexpr DType promote_types(DType a, DType b) { return a > b ? a : b; }

// Maps C++ types to dtypes and back.
template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};
template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with the C++ type of `t`; f is usually a generic lambda
// `[&]<class T>(TypeTag<T>) { ... }`.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool:
      return f(TypeTag<bool>{});
    case DType::Int32:
      return f(TypeTag<int32_t>{});
    case DType::Int64:
      return f(TypeTag<int64_t>{});
    case DType::Float32:
      return f(TypeTag<float>{});
    case DType::Float64:
      break;
  }
  return f(TypeTag<double>{});
}

}  // namespace kiln

template <>
struct fmt::formatter<kiln::DType> : fmt::formatter<std::string_view> {
  auto format(kiln::DType t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(kiln::dtype_name(t), ctx);
  }
};
