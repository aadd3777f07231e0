#include "runtime/device.h"

namespace kiln {

// The CUDA backend (NVRTC codegen, driver loading through dlopen) is not part of this build yet,
// so no CUDA device is ever usable; Device::cuda() tensors are rejected with a kiln::Error.
bool cuda_is_available() { return false; }

}  // namespace kiln
