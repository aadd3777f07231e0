// The kernel cache: compiled code keyed by the canonical encoding of what was compiled (the loop
// kernel's encode() plus the target's own words: ISA, operand layouts), so that two regions with
// the same kernel share its code. A hit compares the whole key word for word: a hash collision
// never runs the wrong kernel. Thread-safe; entries live as long as the cache.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

template <class Value>
class KernelCache {
 public:
  struct Counters {
    int64_t hits = 0, misses = 0;
  };

  // The cached value for `key`, or make() stored under it. make() runs under the cache's lock,
  // so one key is never compiled twice; it may throw (nothing is stored).
  template <class Make>
  Value get_or_make(const std::vector<uint64_t>& key, Make&& make) {
    std::lock_guard lock(mu_);
    auto& bucket = entries_[hash_words(key)];
    if (const Value* hit = find(bucket, key)) {
      ++counters_.hits;
      return *hit;
    }
    Value v = make();
    bucket.emplace_back(key, v);
    ++counters_.misses;
    return v;
  }

  // Whether `key` has a value now (another thread may store one right after).
  bool contains(const std::vector<uint64_t>& key) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(hash_words(key));
    return it != entries_.end() && find(it->second, key) != nullptr;
  }

  // The value stored under `key`, or `none` (never makes one; counted neither as a hit nor as
  // a miss).
  Value lookup(const std::vector<uint64_t>& key, Value none) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(hash_words(key));
    if (it == entries_.end()) return none;
    const Value* v = find(it->second, key);
    return v != nullptr ? *v : none;
  }

  // Stores `value` under `key` unless a value is there already (made by another thread, which
  // keeps it); counted neither as a hit nor as a miss.
  void put(const std::vector<uint64_t>& key, Value value) {
    std::lock_guard lock(mu_);
    auto& bucket = entries_[hash_words(key)];
    if (find(bucket, key) == nullptr) bucket.emplace_back(key, std::move(value));
  }

  // Drops every entry (what they point to lives on: compiled code is never freed).
  void clear() {
    std::lock_guard lock(mu_);
    entries_.clear();
  }

  Counters counters() const {
    std::lock_guard lock(mu_);
    return counters_;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& [h, b] : entries_) n += b.size();
    return n;
  }

 private:
  using Bucket = std::vector<std::pair<std::vector<uint64_t>, Value>>;
  // The value stored under `key` in its hash's bucket (the whole key compared), or null.
  static const Value* find(const Bucket& bucket, const std::vector<uint64_t>& key) {
    for (const auto& [words, value] : bucket)
      if (words == key) return &value;
    return nullptr;
  }
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Bucket> entries_;
  Counters counters_;
};

}  // namespace kiln::jit
