// Bytes between devices, for Tensor::to(Device) and copy_ across devices: the device-neutral
// face of runtime/cuda/device_memory.h, so that ops/ never names CUDA.
#pragma once
#include <cstddef>

#include "runtime/device.h"

namespace kiln {

// Copies `nbytes` from `src` (memory of `src_device`) to `dst` (memory of `dst_device`). A host
// destination is written when this returns (the source device's queued work is waited for); a
// device destination is written in its stream's order, and `src` may be reused on return.
void copy_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t nbytes);

// Waits for the work queued on device `d` (nothing to wait for on the CPU).
void synchronize_device(Device d);
// Waits for the work queued on every device in use (kiln::sync()).
void synchronize_all_devices();

}  // namespace kiln
