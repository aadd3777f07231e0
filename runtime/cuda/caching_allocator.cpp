#include "runtime/cuda/caching_allocator.h"

#include <algorithm>

#include "runtime/error.h"

namespace kiln::cuda {

namespace {
constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = size_t{2} << 20;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

std::string mib(size_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}
}  // namespace

size_t device_block_size(size_t bytes) {
  if (bytes == 0) return 0;
  KILN_CHECK(bytes <= (size_t{1} << 62), "cuda allocator: a request of {} bytes is too large",
             bytes);
  return bytes <= kSmallLimit ? round_up(bytes, kSmallRound) : round_up(bytes, kLargeRound);
}

CachingAllocator::CachingAllocator(std::unique_ptr<DeviceMemory> memory, std::string device_name)
    : memory_(std::move(memory)), name_(std::move(device_name)) {}

CachingAllocator::~CachingAllocator() {
  // Cached blocks go back; blocks still in use belong to storages that outlive the allocator
  // (only at process exit, where the driver reclaims everything).
  try {
    release_cache();
  } catch (...) {
  }
}

uint64_t CachingAllocator::take_cached(size_t size, const void* stream) {
  auto it = cache_.find({stream, size});
  if (it == cache_.end() || it->second.empty()) return 0;
  const uint64_t p = it->second.back();
  it->second.pop_back();
  if (it->second.empty()) cache_.erase(it);
  stats_.cached -= size;
  return p;
}

uint64_t CachingAllocator::allocate(size_t bytes, const void* stream) {
  const size_t size = device_block_size(bytes);
  if (size == 0) return 0;
  std::lock_guard lock(mu_);
  uint64_t p = take_cached(size, stream);
  if (p != 0) {
    ++stats_.hits;
  } else {
    p = memory_->allocate(size);
    if (p == 0) {
      // Cached blocks of other classes or streams may be what the device lacks.
      ++stats_.cache_releases;
      release_cache_locked();
      p = memory_->allocate(size);
      if (p == 0) raise_out_of_memory(bytes, size);
    }
    ++stats_.misses;
  }
  live_.emplace(p, Live{size, stream});
  stats_.allocated += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.allocated + stats_.cached);
  return p;
}

void CachingAllocator::free(uint64_t ptr) {
  if (ptr == 0) return;
  std::lock_guard lock(mu_);
  auto it = live_.find(ptr);
  KILN_CHECK(it != live_.end(), "cuda allocator ({}): freeing {:#x}, which it did not allocate",
             name_, ptr);
  const Live b = it->second;
  live_.erase(it);
  stats_.allocated -= b.size;
  stats_.cached += b.size;
  cache_[{b.stream, b.size}].push_back(ptr);
}

void CachingAllocator::release_cache() {
  std::lock_guard lock(mu_);
  release_cache_locked();
}

void CachingAllocator::release_cache_locked() {
  if (cache_.empty()) return;
  // Work queued before the blocks were freed may still read or write them.
  memory_->synchronize();
  for (auto& [key, blocks] : cache_)
    for (uint64_t p : blocks) memory_->free(p);
  cache_.clear();
  stats_.cached = 0;
}

void CachingAllocator::raise_out_of_memory(size_t bytes, size_t block) {
  const auto [free_bytes, total] = memory_->memory_info();
  fail(
      "{}: out of memory: tried to allocate {} ({} bytes, a block of {}); kiln holds {} in "
      "tensors and {} cached (released and retried once); the device has {} free of {}",
      name_, mib(bytes), bytes, mib(block), mib(stats_.allocated), mib(stats_.cached),
      mib(free_bytes), mib(total));
}

DeviceAllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace kiln::cuda
