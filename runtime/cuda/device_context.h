// One CUDA device as kiln uses it: the driver's primary context (shared with any other library in
// the process), one non-blocking stream on which every kiln operation of the device is queued in
// order, and the properties kernels need (architecture, multiprocessor count, name).
//
// Created on first use of the device and kept for the process (the primary context is retained,
// never released: tensors freed at exit still return their memory through it). Sync points
// (item, to_vector, to(kCPU), printing, kiln::sync) call synchronize(), which waits for the
// stream and turns an error of an earlier asynchronous launch into a kiln::Error.
#pragma once
#include <cstddef>
#include <string>

#include "runtime/cuda/driver_api.h"

namespace kiln::cuda {

// The most devices kiln addresses (its per-device tables are arrays of this size).
inline constexpr int kMaxDevices = 64;

struct DeviceContext {
  int index = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int sm = 0;  // compute capability as 90 for sm_90
  int multiprocessors = 0;
  size_t total_memory = 0;
  std::string name;
};

// The context of device `index` (created on the first call; thread-safe). Throws kiln::Error when
// CUDA is not available or the index is out of range.
const DeviceContext& device_context(int index);

// Makes device `index`'s context current on this thread (one compare when it already is) and
// returns it.
const DeviceContext& make_current(int index);

// Waits for everything queued on device `index`'s stream; raises an earlier launch's error.
void synchronize(int index);
// synchronize() for every device whose context exists (kiln::sync()).
void synchronize_all();

}  // namespace kiln::cuda
