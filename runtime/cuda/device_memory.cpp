#include "runtime/cuda/device_memory.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/kernel_errors.h"
#include "runtime/error.h"
#include "runtime/logging.h"

namespace kiln::cuda {

namespace {

constexpr CUresult kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY
// The pinned staging buffer of a device: transfers go through it in chunks of this size.
constexpr size_t kStagingBytes = size_t{8} << 20;

class DriverMemory final : public DeviceMemory {
 public:
  explicit DriverMemory(int index) : index_(index) {}
  uint64_t allocate(size_t bytes) override {
    make_current(index_);
    CUdeviceptr p = 0;
    const CUresult r = driver().cuMemAlloc(&p, bytes);
    if (r == kOutOfMemory) return 0;
    check(r, "cuMemAlloc");
    return p;
  }
  void free(uint64_t ptr) override {
    make_current(index_);
    check(driver().cuMemFree(ptr), "cuMemFree");
  }
  void synchronize() override { cuda::synchronize(index_); }
  std::pair<size_t, size_t> memory_info() override {
    make_current(index_);
    size_t f = 0, t = 0;
    check(driver().cuMemGetInfo(&f, &t), "cuMemGetInfo");
    return {f, t};
  }

 private:
  int index_;
};

struct PerDevice {
  CachingAllocator allocator;
  std::mutex staging_mu;
  void* staging = nullptr;
  explicit PerDevice(int index)
      : allocator(std::make_unique<DriverMemory>(index), fmt::format("cuda:{}", index)) {}
};

std::array<std::atomic<PerDevice*>, kMaxDevices>& devices() {
  static auto* d = new std::array<std::atomic<PerDevice*>, kMaxDevices>{};  // outlives storages
  return *d;
}

PerDevice& per_device(int index) {
  if (index >= 0 && index < kMaxDevices) [[likely]] {
    if (PerDevice* p = devices()[index].load(std::memory_order_acquire)) return *p;
  }
  static std::mutex mu;
  device_context(index);  // validates the index, creates the context
  std::lock_guard lock(mu);
  if (PerDevice* p = devices()[index].load(std::memory_order_acquire)) return *p;
  auto* p = new PerDevice(index);
  devices()[index].store(p, std::memory_order_release);
  return *p;
}

void* staging_buffer(PerDevice& d) {
  if (d.staging == nullptr)
    check(driver().cuMemHostAlloc(&d.staging, kStagingBytes, kMemHostAllocPortable),
          "cuMemHostAlloc (the pinned staging buffer)");
  return d.staging;
}

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace

CachingAllocator& device_allocator(int index) { return per_device(index).allocator; }

void* device_allocate(int index, size_t nbytes) {
  PerDevice& d = per_device(index);
  const DeviceContext& c = make_current(index);
  return reinterpret_cast<void*>(d.allocator.allocate(nbytes, c.stream));
}

void device_free(int index, void* p) noexcept {
  if (p == nullptr) return;
  try {
    per_device(index).allocator.free(reinterpret_cast<uint64_t>(p));
  } catch (const std::exception& e) {
    KILN_WARN(Runtime, "cuda:{}: freeing a block failed: {}", index, e.what());
  }
}

DeviceAllocatorStats device_allocator_stats() {
  DeviceAllocatorStats sum;
  for (auto& slot : devices()) {
    PerDevice* p = slot.load(std::memory_order_acquire);
    if (p == nullptr) continue;
    const DeviceAllocatorStats s = p->allocator.stats();
    sum.allocated += s.allocated;
    sum.cached += s.cached;
    sum.peak_allocated += s.peak_allocated;
    sum.peak_reserved += s.peak_reserved;
    sum.hits += s.hits;
    sum.misses += s.misses;
    sum.cache_releases += s.cache_releases;
  }
  return sum;
}

void copy_host_to_device(int index, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  PerDevice& d = per_device(index);
  const DeviceContext& c = make_current(index);
  std::lock_guard lock(d.staging_mu);
  char* stage = static_cast<char*>(staging_buffer(d));
  for (size_t done = 0; done < nbytes; done += kStagingBytes) {
    const size_t n = std::min(kStagingBytes, nbytes - done);
    std::memcpy(stage, static_cast<const char*>(src) + done, n);
    check(driver().cuMemcpyHtoDAsync(dptr(static_cast<char*>(dst) + done), stage, n, c.stream),
          "cuMemcpyHtoDAsync");
    // The staging buffer is reused by the next chunk (and the next transfer).
    check(driver().cuStreamSynchronize(c.stream), "cuStreamSynchronize (copy to the device)");
  }
}

void copy_device_to_host(int index, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  PerDevice& d = per_device(index);
  const DeviceContext& c = make_current(index);
  std::lock_guard lock(d.staging_mu);
  char* stage = static_cast<char*>(staging_buffer(d));
  for (size_t done = 0; done < nbytes; done += kStagingBytes) {
    const size_t n = std::min(kStagingBytes, nbytes - done);
    check(
        driver().cuMemcpyDtoHAsync(stage, dptr(static_cast<const char*>(src) + done), n, c.stream),
        "cuMemcpyDtoHAsync");
    check(driver().cuStreamSynchronize(c.stream), "cuStreamSynchronize (copy to the host)");
    std::memcpy(static_cast<char*>(dst) + done, stage, n);
  }
  check_kernel_errors(index);  // a sync point: the stream is idle
}

void copy_device_to_device(int index, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  const DeviceContext& c = make_current(index);
  check(driver().cuMemcpyDtoDAsync(dptr(dst), dptr(src), nbytes, c.stream), "cuMemcpyDtoDAsync");
}

}  // namespace kiln::cuda
