#include "runtime/device_copy.h"

#include <cstring>
#include <vector>

#include "runtime/cuda/device_context.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/error.h"

namespace kiln {

void copy_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
  } else if (src_device.is_cpu()) {
    cuda::copy_host_to_device(dst_device.index, dst, src, nbytes);
  } else if (dst_device.is_cpu()) {
    cuda::copy_device_to_host(src_device.index, dst, src, nbytes);
  } else if (dst_device == src_device) {
    cuda::copy_device_to_device(dst_device.index, dst, src, nbytes);
  } else {
    // Between two GPUs through the host: peer access is not set up (part 1 of the backend).
    std::vector<char> host(nbytes);
    cuda::copy_device_to_host(src_device.index, host.data(), src, nbytes);
    cuda::copy_host_to_device(dst_device.index, dst, host.data(), nbytes);
  }
}

void synchronize_device(Device d) {
  if (d.is_cuda()) cuda::synchronize(d.index);
}

void synchronize_all_devices() { cuda::synchronize_all(); }

}  // namespace kiln
