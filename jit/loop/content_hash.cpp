#include "jit/loop/content_hash.h"

#include <fmt/format.h>

#include <cstring>

namespace kiln::jit {

namespace {
constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;  // odd: multiplication by it is a bijection

uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w;
  h *= kMul;
  return h ^ (h >> 29);
}

// splitmix64's finalizer: full avalanche of the last words into every output bit.
uint64_t finish(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

uint64_t content_hash(std::span<const char> bytes, uint64_t seed) {
  uint64_t h = finish(seed ^ kMul);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  if (i < bytes.size()) std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  h = mix(h, tail);
  h = mix(h, uint64_t(bytes.size()));  // "ab" and "ab\0" differ
  return finish(h);
}

std::string content_hash_hex128(std::string_view s) {
  return fmt::format("{:016x}{:016x}", content_hash(s, 1), content_hash(s, 2));
}

}  // namespace kiln::jit
