// Storage: a block of memory shared by a tensor and all its views, plus the version counter
// that in-place writes bump (shared by views, as in PyTorch).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/device.h"
#include "runtime/ref.h"

namespace kiln {

class Storage : public RefCounted {
 public:
  Storage(size_t nbytes, Device device);  // allocates
  ~Storage() override;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_;
  Device device_;
  std::atomic<uint32_t> version_{0};
};

}  // namespace kiln
