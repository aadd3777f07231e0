#include "runtime/storage.h"

#include <utility>

#include "runtime/allocator.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/error.h"

namespace kiln {

namespace {
void check_device(Device device) { check_device_available("storage", device); }
}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  check_device(device);
  data_ = device.is_cpu() ? cpu_allocate(nbytes) : cuda::device_allocate(device.index, nbytes);
}

Storage::Storage(size_t nbytes, Device device, LazyProducer* producer, uint32_t slot,
                 uint32_t epoch)
    : nbytes_(nbytes), device_(device), lazy_(producer), slot_(slot), epoch_(epoch) {
  check_device(device);
}

Storage::~Storage() {
  if (LazyProducer* p = lazy_.load(std::memory_order_acquire)) p->release(*this);
  if (device_.is_cpu())
    cpu_free(data_, nbytes_);
  else
    cuda::device_free(device_.index, data_);
}

void Storage::materialize(SyncReason reason) const {
  if (LazyProducer* p = lazy_.load(std::memory_order_acquire))
    p->materialize(const_cast<Storage&>(*this), reason);
}

void Storage::adopt_data(void* data) {
  cpu_free(data_, nbytes_);
  data_ = data;
  lazy_.store(nullptr, std::memory_order_release);
}

void* Storage::release_data() { return std::exchange(data_, nullptr); }

Ref<Storage> Storage::try_ref(Storage* s) {
  if (s == nullptr || !s->try_retain()) return nullptr;
  return Ref<Storage>::adopt(s);
}

}  // namespace kiln
