// Device: where a tensor's storage lives. CUDA is a type from the start; the backend arrives in
// parts (docs/cuda.md): the driver and NVRTC are found at run time, CUDA tensors come next.
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

// True when this machine can run CUDA: the driver (libcuda.so.1) loads, cuInit succeeds, there is
// at least one device, and libnvrtc loads. The first call loads the libraries (once, thread-safe).
bool cuda_is_available();
// The number of CUDA devices the driver reports (0 when CUDA is not available).
int cuda_device_count();
// Why CUDA is not available ("no CUDA driver is installed (...)", "cuInit failed: ...", "no CUDA
// device ...", "no libnvrtc (...)"); empty when it is.
std::string cuda_unavailable_reason();
// Raises kiln::Error "<op>: device <d> is not available (<why>)" unless kiln can hold tensors on
// `d`: the reason names what is missing (driver, device, libnvrtc) or that the index is past the
// last device. Inline: factories call it on every op, and a CPU device costs one branch.
void check_cuda_device_available(const char* op, Device d);
inline void check_device_available(const char* op, Device d) {
  if (!d.is_cpu()) [[unlikely]]
    check_cuda_device_available(op, d);
}

}  // namespace kiln

template <>
struct fmt::formatter<kiln::Device> : fmt::formatter<std::string_view> {
  auto format(kiln::Device d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(d.str(), ctx);
  }
};
