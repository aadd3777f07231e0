// Device memory and transfers for kiln's storages: one caching allocator per device (blocks for
// work on the device's stream), and copies between host and device memory through a pinned
// staging buffer (pageable memory cannot be copied asynchronously; pinning each tensor would
// cost more than the copy).
#pragma once
#include <cstddef>

#include "runtime/cuda/caching_allocator.h"

namespace kiln::cuda {

// Device `index`'s allocator (created with the device's context).
CachingAllocator& device_allocator(int index);
// A block for a storage of `nbytes` on device `index` (nullptr for 0 bytes).
void* device_allocate(int index, size_t nbytes);
void device_free(int index, void* p) noexcept;
// The allocators' statistics summed over the devices in use (all zero when none is).
DeviceAllocatorStats device_allocator_stats();

// Host to device: returns once `src` may be reused (the copy has left the staging buffer).
void copy_host_to_device(int index, void* dst, const void* src, size_t nbytes);
// Device to host: waits for the work queued on the stream, then copies (a sync point).
void copy_device_to_host(int index, void* dst, const void* src, size_t nbytes);
// Within one device, queued on its stream.
void copy_device_to_device(int index, void* dst, const void* src, size_t nbytes);

}  // namespace kiln::cuda
