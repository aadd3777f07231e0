// The caching device allocator: device memory is slow to get (cuMemAlloc synchronizes and costs
// tens of microseconds), so freed blocks are kept and handed out again.
//  - Size classes: requests up to 1 MiB round up to a multiple of 512 bytes, larger ones to a
//    multiple of 2 MiB; a cached block is reused only for a request of its exact class.
//  - Reuse on the same stream only: a block freed while kernels queued on its stream may still
//    use it is safe to hand to later work of that stream (stream order), never to another's.
//  - When the device refuses an allocation, the cache is released (after waiting for the device)
//    and the allocation retried once; a second failure raises kiln::Error saying how much was
//    asked, how much kiln holds (in use and cached) and how much the device has free.
// The device itself is behind DeviceMemory, so the policy is tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::cuda {

// What the allocator needs from a device. Addresses are integers (CUdeviceptr).
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // A block of `bytes`, or 0 when the device is out of memory (other failures throw).
  virtual uint64_t allocate(size_t bytes) = 0;
  virtual void free(uint64_t ptr) = 0;
  // Waits until no queued work can still use freed blocks (before they go back to the device).
  virtual void synchronize() = 0;
  // The device's free and total memory.
  virtual std::pair<size_t, size_t> memory_info() = 0;
};

struct DeviceAllocatorStats {
  size_t allocated = 0;         // bytes in blocks handed out (class sizes)
  size_t cached = 0;            // bytes in freed blocks kept for reuse
  size_t peak_allocated = 0;    // the most `allocated` has been
  size_t peak_reserved = 0;     // the most allocated + cached has been (what kiln held)
  uint64_t hits = 0;            // allocations served from the cache
  uint64_t misses = 0;          // allocations that went to the device
  uint64_t cache_releases = 0;  // times an allocation failure released the cache
};

// The bytes a request of `bytes` occupies (its class); 0 for 0.
size_t device_block_size(size_t bytes);

class CachingAllocator {
 public:
  // `device_name` ("cuda:0") is used in errors.
  CachingAllocator(std::unique_ptr<DeviceMemory> memory, std::string device_name);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` for work on `stream` (an opaque stream handle); 0 for 0 bytes.
  uint64_t allocate(size_t bytes, const void* stream);
  // Returns a block from allocate(); it is kept for reuse on the stream it was allocated for.
  void free(uint64_t ptr);
  // Waits for the device and gives every cached block back to it.
  void release_cache();
  DeviceAllocatorStats stats() const;

 private:
  struct Live {
    size_t size;
    const void* stream;
  };
  uint64_t take_cached(size_t size, const void* stream);
  void release_cache_locked();
  [[noreturn]] void raise_out_of_memory(size_t bytes, size_t block);

  std::unique_ptr<DeviceMemory> memory_;
  std::string name_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Live> live_;
  std::map<std::pair<const void*, size_t>, std::vector<uint64_t>> cache_;
  DeviceAllocatorStats stats_;
};

}  // namespace kiln::cuda
