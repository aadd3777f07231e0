#include "runtime/cuda/kernel_errors.h"

#include <array>
#include <atomic>
#include <mutex>

#include <fmt/format.h>

#include "runtime/cuda/device_context.h"
#include "runtime/cuda/driver.h"
#include "runtime/error.h"
#include "runtime/op_list.h"

namespace kiln::cuda {

namespace {

constexpr size_t kWordBytes = 4 * sizeof(uint64_t);

struct ErrorWord {
  std::mutex mu;
  CUdeviceptr address = 0;         // never freed: lives as long as the primary context
  std::atomic<bool> armed{false};  // a kernel that may report ran since the last read
};

std::array<ErrorWord, kMaxDevices>& words() {
  static std::array<ErrorWord, kMaxDevices> w;
  return w;
}

}  // namespace

uint64_t kernel_error_word(int index) {
  KILN_CHECK(index >= 0 && index < kMaxDevices, "cuda: device index {} out of range", index);
  ErrorWord& w = words()[static_cast<size_t>(index)];
  std::lock_guard lock(w.mu);
  if (w.address == 0) {
    const DeviceContext& c = make_current(index);
    CUdeviceptr p = 0;
    check(driver().cuMemAlloc(&p, kWordBytes), "cuMemAlloc (the kernel error word)");
    check(driver().cuMemsetD8Async(p, 0, kWordBytes, c.stream), "cuMemsetD8Async");
    w.address = p;
  }
  w.armed.store(true, std::memory_order_release);
  return w.address;
}

std::string kernel_error_message(const std::array<uint64_t, 4>& v, int index) {
  const char* op = v[0] >= 1 && v[0] <= static_cast<uint64_t>(kNumOps)
                       ? op_name(static_cast<OpId>(v[0] - 1))
                       : "cuda kernel";
  const auto value = static_cast<int64_t>(v[1]), dim = static_cast<int64_t>(v[2]),
             size = static_cast<int64_t>(v[3]);
  return fmt::format(
      "{}: index {} is out of range for dim {} of size {} (expected an index in [0, {}); found on "
      "cuda:{} at the next sync)",
      op, value, dim, size, size, index);
}

void check_kernel_errors(int index) {
  if (index < 0 || index >= kMaxDevices) return;
  ErrorWord& w = words()[static_cast<size_t>(index)];
  if (!w.armed.load(std::memory_order_acquire)) return;
  std::lock_guard lock(w.mu);
  if (!w.armed.exchange(false)) return;
  const DeviceContext& c = make_current(index);
  std::array<uint64_t, 4> v{};
  check(driver().cuMemcpyDtoHAsync(v.data(), w.address, kWordBytes, c.stream),
        "cuMemcpyDtoHAsync (the kernel error word)");
  check(driver().cuStreamSynchronize(c.stream), "cuStreamSynchronize (the kernel error word)");
  if (v[0] == 0) return;
  // Cleared before raising, so the device is usable for the next op.
  check(driver().cuMemsetD8Async(w.address, 0, kWordBytes, c.stream), "cuMemsetD8Async");
  check(driver().cuStreamSynchronize(c.stream), "cuStreamSynchronize (the kernel error word)");
  fail("{}", kernel_error_message(v, index));
}

}  // namespace kiln::cuda
