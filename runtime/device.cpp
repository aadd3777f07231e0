#include "runtime/device.h"

#include "runtime/cuda/driver.h"
#include "runtime/cuda/nvrtc_library.h"
#include "runtime/error.h"

namespace kiln {

std::string cuda_unavailable_reason() {
  const auto& drv = cuda::driver_status();
  if (!drv.usable) return drv.reason;
  // The driver alone cannot run anything: every kiln kernel is compiled by NVRTC.
  const auto& rtc = cuda::nvrtc_status();
  if (!rtc.usable) return rtc.reason;
  return "";
}

bool cuda_is_available() { return cuda_unavailable_reason().empty(); }

int cuda_device_count() { return cuda_is_available() ? cuda::driver_status().device_count : 0; }

void check_cuda_device_available(const char* op, Device d) {
  std::string why = cuda_unavailable_reason();
  if (why.empty() && (d.index < 0 || d.index >= cuda_device_count()))
    why = fmt::format("this machine has {} CUDA device(s)", cuda_device_count());
  if (!why.empty()) fail("{}: device {} is not available ({})", op, d, why);
}

}  // namespace kiln
