#include "runtime/storage.h"

#include "runtime/allocator.h"
#include "runtime/error.h"

namespace kiln {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  KILN_CHECK(device.is_cpu(), "storage: device {} is not available (the CUDA backend is not built)",
             device);
  data_ = cpu_allocate(nbytes);
}

Storage::~Storage() { cpu_free(data_, nbytes_); }

}  // namespace kiln
