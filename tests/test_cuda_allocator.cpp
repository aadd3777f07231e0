// The caching device allocator's policy, on a fake device (no GPU needed): size classes, reuse of
// a freed block for the same class on the same stream only, the release of the cache and one
// retry when the device is out of memory, the error with the numbers, and the peaks.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "expect_error.h"
#include "runtime/cuda/caching_allocator.h"
#include "runtime/profiler_buffers.h"

namespace kiln {
namespace {

using cuda::CachingAllocator;
using cuda::device_block_size;
using cuda::DeviceMemory;

// A device with `capacity` bytes; counts calls so tests see what reached the device.
struct FakeDevice {
  size_t capacity = 0;
  size_t used = 0;
  uint64_t next = 0x10000;
  int allocs = 0, frees = 0, syncs = 0;
  std::map<uint64_t, size_t> blocks;
};

class FakeMemory final : public DeviceMemory {
 public:
  explicit FakeMemory(FakeDevice& d) : d_(d) {}
  uint64_t allocate(size_t bytes) override {
    ++d_.allocs;
    if (d_.used + bytes > d_.capacity) return 0;
    d_.used += bytes;
    const uint64_t p = d_.next;
    d_.next += bytes + 4096;
    d_.blocks[p] = bytes;
    return p;
  }
  void free(uint64_t p) override {
    ++d_.frees;
    d_.used -= d_.blocks.at(p);
    d_.blocks.erase(p);
  }
  void synchronize() override { ++d_.syncs; }
  std::pair<size_t, size_t> memory_info() override { return {d_.capacity - d_.used, d_.capacity}; }

 private:
  FakeDevice& d_;
};

int kStreamA, kStreamB;  // two distinct stream handles
const void* const A = &kStreamA;
const void* const B = &kStreamB;

TEST(CudaAllocator, SizeClasses) {
  EXPECT_EQ(device_block_size(0), 0u);
  EXPECT_EQ(device_block_size(1), 512u);
  EXPECT_EQ(device_block_size(512), 512u);
  EXPECT_EQ(device_block_size(513), 1024u);
  EXPECT_EQ(device_block_size(1 << 20), size_t{1} << 20);
  EXPECT_EQ(device_block_size((1 << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(device_block_size((5 << 20) + 3), size_t{6} << 20);
}

TEST(CudaAllocator, ReusesAFreedBlockOfTheSameClassOnTheSameStream) {
  FakeDevice dev;
  dev.capacity = size_t{64} << 20;
  CachingAllocator alloc(std::make_unique<FakeMemory>(dev), "cuda:0");
  const uint64_t p = alloc.allocate(1000, A);
  EXPECT_EQ(dev.allocs, 1);
  alloc.free(p);
  EXPECT_EQ(dev.frees, 0);               // kept
  EXPECT_EQ(alloc.allocate(900, A), p);  // same class (1024 bytes): the same block
  EXPECT_EQ(dev.allocs, 1);
  const uint64_t q = alloc.allocate(2000, A);  // another class: a new block
  EXPECT_NE(q, p);
  EXPECT_EQ(dev.allocs, 2);
  alloc.free(q);
  // Another stream never gets the block (its queued work may still use it).
  const uint64_t r = alloc.allocate(2000, B);
  EXPECT_NE(r, q);
  EXPECT_EQ(dev.allocs, 3);
  const auto s = alloc.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.allocated, 1024u + 2048u);
  EXPECT_EQ(s.cached, 2048u);
  EXPECT_EQ(alloc.allocate(0, A), 0u);
  alloc.free(0);  // ignored
}

TEST(CudaAllocator, TracksPeaks) {
  FakeDevice dev;
  dev.capacity = size_t{64} << 20;
  CachingAllocator alloc(std::make_unique<FakeMemory>(dev), "cuda:0");
  const uint64_t a = alloc.allocate(3 << 20, A);  // 4 MiB class
  const uint64_t b = alloc.allocate(1 << 20, A);  // 1 MiB
  alloc.free(a);
  alloc.free(b);
  const uint64_t c = alloc.allocate(100, A);
  auto s = alloc.stats();
  EXPECT_EQ(s.peak_allocated, size_t{5} << 20);
  EXPECT_EQ(s.peak_reserved, (size_t{5} << 20) + 512);
  alloc.free(c);
  alloc.release_cache();
  s = alloc.stats();
  EXPECT_EQ(s.cached, 0u);
  EXPECT_EQ(s.allocated, 0u);
  EXPECT_EQ(dev.used, 0u);
  EXPECT_GE(dev.syncs, 1);  // freed blocks go back only after the device is idle
}

TEST(CudaAllocator, ReleasesTheCacheAndRetriesOnceWhenTheDeviceIsFull) {
  FakeDevice dev;
  dev.capacity = size_t{10} << 20;
  CachingAllocator alloc(std::make_unique<FakeMemory>(dev), "cuda:0");
  alloc.free(alloc.allocate(size_t{6} << 20, A));  // cached: 6 MiB held, unused
  const int syncs = dev.syncs;
  const uint64_t p = alloc.allocate(size_t{8} << 20, A);  // fits only once the cache is released
  EXPECT_NE(p, 0u);
  EXPECT_EQ(dev.syncs, syncs + 1);
  EXPECT_EQ(alloc.stats().cache_releases, 1u);
  EXPECT_EQ(alloc.stats().cached, 0u);
  EXPECT_EQ(dev.used, size_t{8} << 20);
}

TEST(CudaAllocator, OutOfMemorySaysWhatWasAskedHeldAndFree) {
  FakeDevice dev;
  dev.capacity = size_t{10} << 20;
  CachingAllocator alloc(std::make_unique<FakeMemory>(dev), "cuda:0");
  const uint64_t held = alloc.allocate(size_t{4} << 20, A);
  alloc.free(alloc.allocate(size_t{2} << 20, B));  // cached on another stream
  const int allocs = dev.allocs;
  testing::expect_error(
      [&] { alloc.allocate(size_t{7} << 20, A); },
      "cuda:0: out of memory: tried to allocate 7.0 MiB",
      "kiln holds 4.0 MiB in tensors and 0.0 MiB cached (released and retried once)");
  EXPECT_EQ(dev.allocs, allocs + 2);  // the first try and one retry after the release
  try {
    alloc.allocate(size_t{7} << 20, A);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the device has 6.0 MiB free of 10.0 MiB"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(alloc.stats().allocated, size_t{4} << 20);
  alloc.free(held);
  EXPECT_NE(alloc.allocate(size_t{7} << 20, A), 0u);  // usable again
}

TEST(CudaAllocator, FreeingAForeignPointerIsAnError) {
  FakeDevice dev;
  dev.capacity = size_t{1} << 20;
  CachingAllocator alloc(std::make_unique<FakeMemory>(dev), "cuda:3");
  testing::expect_error([&] { alloc.free(0x1234); }, "cuda:3", "did not allocate");
}

// KILN_STATS shows the device allocator's peaks once a device was used, and nothing before.
TEST(CudaAllocator, PeaksAreInTheStatsSummary) {
  profiler::detail::Snapshot snap;
  EXPECT_EQ(profiler::detail::render_stats(snap).find("cuda memory"), std::string::npos);
  snap.cuda_memory.misses = 3;
  snap.cuda_memory.hits = 5;
  snap.cuda_memory.peak_allocated = size_t{5} << 20;
  snap.cuda_memory.peak_reserved = size_t{7} << 20;
  const std::string text = profiler::detail::render_stats(snap);
  EXPECT_NE(text.find("cuda memory: peak 5.0 MiB in tensors, peak 7.0 MiB held with the cache; 8 "
                      "allocations (5 from the cache), 0 cache releases"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace kiln
