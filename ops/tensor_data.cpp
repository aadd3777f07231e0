// Data access on Tensor: item, to_vector, data_ptr. These are sync points (the recorder
// materializes the tensor first, once it exists). item and to_vector of a device tensor read a
// host copy; data_ptr of one waits for the device and returns the device address (as libtorch).
#include <cstring>

#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "runtime/device_copy.h"
#include "runtime/lazy.h"

namespace kiln {

template <class T>
T Tensor::item() const {
  const TensorImpl& x = checked("item");
  KILN_CHECK(x.numel() == 1, "item: expects a tensor with one element, got {}", describe(*this));
  if (!x.device().is_cpu()) return to(Device::cpu()).item<T>();
  sync_point(*this, SyncReason::Item);
  T out{};
  visit_dtype(x.dtype(),
              [&]<class S>(TypeTag<S>) { out = static_cast<T>(*static_cast<const S*>(x.data())); });
  return out;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = to(dtype_v<T>).contiguous().to(Device::cpu());
  sync_point(c, SyncReason::ToVector);
  int64_t n = c.impl()->numel();
  std::vector<T> out(n);
  if (n == 0) return out;
  const T* p = static_cast<const T*>(c.impl()->data());
  if constexpr (std::is_same_v<T, bool>) {
    for (int64_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    std::memcpy(out.data(), p, n * sizeof(T));
  }
  return out;
}

template <class T>
const T* Tensor::data_ptr() const {
  const TensorImpl& x = checked("data_ptr");
  KILN_CHECK(x.dtype() == dtype_v<T>, "data_ptr: the tensor is {}, not {}", describe(*this),
             dtype_v<T>);
  sync_point(*this, SyncReason::DataPtr);
  synchronize_device(x.device());
  return static_cast<const T*>(x.data());
}

template <class T>
T* Tensor::mutable_data_ptr() {
  const TensorImpl& x = checked("mutable_data_ptr");
  KILN_CHECK(x.dtype() == dtype_v<T>, "mutable_data_ptr: the tensor is {}, not {}", describe(*this),
             dtype_v<T>);
  sync_point(*this, SyncReason::DataPtr);
  before_write(*this);
  x.storage()->bump_version();
  synchronize_device(x.device());
  return static_cast<T*>(x.data());
}

const void* Tensor::raw_data() const {
  const TensorImpl& x = checked("raw_data");
  sync_point(*this, SyncReason::DataPtr);
  synchronize_device(x.device());
  return x.data();
}

#define KILN_INSTANTIATE(T)                             \
  template T Tensor::item<T>() const;                   \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template const T* Tensor::data_ptr<T>() const;        \
  template T* Tensor::mutable_data_ptr<T>();
KILN_INSTANTIATE(bool)
KILN_INSTANTIATE(int32_t)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

void sync() {
  sync_thread(SyncReason::Sync);
  synchronize_all_devices();
}

}  // namespace kiln
