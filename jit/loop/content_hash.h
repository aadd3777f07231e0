// A 64-bit content hash for the kernel disk caches (disk_cache.h): an entry's file name (two of
// them, seeded differently, make 128 bits) and its payload checksum. Not cryptographic: a collision
// in the file name is caught by comparing the stored key material, and the checksum only has to
// catch torn writes and flipped bytes. Every step is a bijection of the state for a fixed input
// word, so changing any one 8-byte word of the input always changes the result.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kiln::jit {

uint64_t content_hash(std::span<const char> bytes, uint64_t seed);
inline uint64_t content_hash(std::string_view s, uint64_t seed) {
  return content_hash(std::span<const char>(s.data(), s.size()), seed);
}
// 32 hex digits: two content hashes of `s` with different seeds.
std::string content_hash_hex128(std::string_view s);

}  // namespace kiln::jit
