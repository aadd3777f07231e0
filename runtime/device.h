// Device: where a tensor's storage lives. CUDA is a type from the start; the backend arrives later.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace kiln {

struct Device {
  enum class Type : uint8_t { CPU, CUDA };

  constexpr Device(Type t = Type::CPU, int idx = 0) : type(t), index(static_cast<int8_t>(idx)) {}
  static constexpr Device cpu() { return Device(Type::CPU); }
  static constexpr Device cuda(int index = 0) { return Device(Type::CUDA, index); }
  constexpr bool is_cuda() const { return type == Type::CUDA; }
  constexpr bool is_cpu() const { return type == Type::CPU; }
  std::string str() const {
    return type == Type::CPU ? std::string("cpu") : fmt::format("cuda:{}", int(index));
  }
  friend constexpr bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
  }

  Type type;
  int8_t index;
};

inline constexpr Device::Type kCPU = Device::Type::CPU;
inline constexpr Device::Type kCUDA = Device::Type::CUDA;

// False until the CUDA backend exists and a driver is found.
bool cuda_is_available();

}  // namespace kiln

template <>
struct fmt::formatter<kiln::Device> : fmt::formatter<std::string_view> {
  auto format(kiln::Device d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(d.str(), ctx);
  }
};
