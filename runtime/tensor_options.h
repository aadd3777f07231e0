// TensorOptions: dtype, device and requires_grad for factories, in libtorch's builder style.
#pragma once
#include "runtime/device.h"
#include "runtime/dtype.h"

namespace kiln {

struct TensorOptions {
  TensorOptions() = default;
  TensorOptions(DType t) : dtype_(t), has_dtype_(true) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions(Device::Type t) : device_(t) {}

  TensorOptions& dtype(DType t) {
    dtype_ = t;
    has_dtype_ = true;
    return *this;
  }
  TensorOptions& device(Device d) {
    device_ = d;
    return *this;
  }
  TensorOptions& requires_grad(bool on) {
    requires_grad_ = on;
    return *this;
  }
  DType dtype() const { return dtype_; }
  bool has_dtype() const { return has_dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  DType dtype_ = DType::Float32;
  bool has_dtype_ = false;
  Device device_ = Device::cpu();
  bool requires_grad_ = false;
};

// Builder shorthands: kiln::dtype(kFloat64).device(kCPU)
inline TensorOptions dtype(DType t) { return TensorOptions().dtype(t); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }

}  // namespace kiln
