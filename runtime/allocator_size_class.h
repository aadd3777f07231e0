// Size classes of the caching CPU allocator (runtime/allocator.cpp). A request is rounded up to
// its class and freed blocks are cached per class, so a block can serve any later request of the
// same class. Classes are the multiples of 64 up to 256 bytes, then four per power of two
// (1.25, 1.5, 1.75 and 2 x 2^p): a block is at most 25% larger than the request above 256 bytes
// (at most 63 bytes larger below), and the bytes past the request in a large block are never
// touched, so their pages are not even faulted in.
#pragma once
#include <bit>
#include <cstddef>

namespace kiln::detail {

inline constexpr size_t kMinClassBytes = 64;
// Requests above 2^46 bytes (64 TiB) are not classed (nor cached); they fail anyway in practice.
inline constexpr int kMaxClassLog2 = 46;
inline constexpr size_t kMaxClassBytes = size_t{1} << kMaxClassLog2;
inline constexpr int kNumClasses = 4 + (kMaxClassLog2 - 8) * 4;

struct SizeClass {
  int index;     // 0 .. kNumClasses - 1, increasing with bytes
  size_t bytes;  // the block size handed out for the class
};

// The class of a request of 1 .. kMaxClassBytes bytes.
constexpr SizeClass size_class(size_t nbytes) {
  if (nbytes <= 256) {
    size_t bytes = (nbytes + kMinClassBytes - 1) / kMinClassBytes * kMinClassBytes;
    return {static_cast<int>(bytes / kMinClassBytes) - 1, bytes};
  }
  int p = std::bit_width(nbytes - 1) - 1;  // 2^p < nbytes <= 2^(p+1), p >= 8
  int step_log2 = p - 2;                   // quarter steps of 2^p
  size_t base = size_t{1} << p;
  size_t m = (nbytes - base + (size_t{1} << step_log2) - 1) >> step_log2;  // 1 .. 4
  return {4 + (p - 8) * 4 + static_cast<int>(m) - 1, base + (m << step_log2)};
}

// The block size of class index (the inverse of size_class).
constexpr size_t class_bytes(int index) {
  if (index < 4) return static_cast<size_t>(index + 1) * kMinClassBytes;
  int p = (index - 4) / 4 + 8;
  size_t m = static_cast<size_t>((index - 4) % 4) + 1;
  return (size_t{1} << p) + (m << (p - 2));
}

static_assert(size_class(1).bytes == 64 && size_class(256).index == 3);
static_assert(size_class(257).bytes == 320 && size_class(257).index == 4);
static_assert(size_class(512).bytes == 512 && size_class(513).bytes == 640);
static_assert(size_class(kMaxClassBytes).index == kNumClasses - 1);
static_assert(class_bytes(size_class(1000).index) == size_class(1000).bytes);
static_assert(class_bytes(kNumClasses - 1) == kMaxClassBytes);

}  // namespace kiln::detail
