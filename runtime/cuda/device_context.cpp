#include "runtime/cuda/device_context.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "runtime/cuda/driver.h"
#include "runtime/cuda/kernel_errors.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/logging.h"

namespace kiln::cuda {

namespace {

struct Registry {
  std::mutex mu;
  std::array<std::atomic<DeviceContext*>, kMaxDevices> contexts{};
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: storages are freed during exit
  return *r;
}

std::unique_ptr<DeviceContext> create(int index) {
  const Driver& d = driver();
  auto c = std::make_unique<DeviceContext>();
  c->index = index;
  check(d.cuDeviceGet(&c->device, index), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&c->context, c->device), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(c->context), "cuCtxSetCurrent");
  check(d.cuStreamCreate(&c->stream, kStreamNonBlocking), "cuStreamCreate");
  int major = 0, minor = 0;
  check(d.cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, c->device), "attribute");
  check(d.cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, c->device), "attribute");
  check(d.cuDeviceGetAttribute(&c->multiprocessors, kAttrMultiprocessorCount, c->device),
        "attribute");
  check(d.cuDeviceTotalMem(&c->total_memory, c->device), "cuDeviceTotalMem");
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof(name), c->device), "cuDeviceGetName");
  c->sm = major * 10 + minor;
  c->name = name;
  KILN_INFO(Runtime, "cuda:{}: {} (sm_{}, {} SMs, {} MiB)", index, c->name, c->sm,
            c->multiprocessors, c->total_memory >> 20);
  return c;
}

thread_local CUcontext t_current = nullptr;

}  // namespace

const DeviceContext& device_context(int index) {
  if (index >= 0 && index < kMaxDevices) [[likely]] {
    if (DeviceContext* c = registry().contexts[index].load(std::memory_order_acquire)) return *c;
  }
  check_device_available("cuda", Device::cuda(index));
  KILN_CHECK(index < kMaxDevices, "cuda: device index {} is beyond kiln's limit of {}", index,
             kMaxDevices);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (DeviceContext* c = r.contexts[index].load(std::memory_order_acquire)) return *c;
  DeviceContext* c = create(index).release();
  t_current = c->context;
  r.contexts[index].store(c, std::memory_order_release);
  return *c;
}

const DeviceContext& make_current(int index) {
  const DeviceContext& c = device_context(index);
  if (t_current != c.context) [[unlikely]] {
    check(driver().cuCtxSetCurrent(c.context), "cuCtxSetCurrent");
    t_current = c.context;
  }
  return c;
}

void synchronize(int index) {
  const DeviceContext& c = make_current(index);
  check(driver().cuStreamSynchronize(c.stream), "cuStreamSynchronize (an earlier CUDA operation)");
  check_kernel_errors(index);
}

void synchronize_all() {
  for (int i = 0; i < kMaxDevices; ++i)
    if (registry().contexts[i].load(std::memory_order_acquire) != nullptr) synchronize(i);
}

}  // namespace kiln::cuda
