#include "runtime/cuda/driver.h"

#include <fmt/format.h>

#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/shared_library.h"

#ifndef KILN_WITH_CUDA
#define KILN_WITH_CUDA 1
#endif

namespace kiln::cuda {

std::string version_string(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

std::string error_text(const Driver& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &name) != kCudaSuccess) name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(r, &text) != kCudaSuccess)
    text = nullptr;
  std::string s = name != nullptr ? std::string(name) : fmt::format("CUresult {}", r);
  if (text != nullptr) s += fmt::format(" ({})", text);
  return s;
}

LoadedDriver load_driver(std::span<const char* const> names) {
  LoadedDriver d;
  DriverStatus& st = d.status;
  SharedLibrary lib = SharedLibrary::open(names);
  if (!lib.loaded()) {
    st.reason = fmt::format("no CUDA driver is installed ({})", lib.why());
    return d;
  }
  st.path = lib.path();
  // Every entry point is resolved up front: a driver too old for one of them is reported now,
  // by name, instead of failing in the middle of a program.
  const char* missing = nullptr;
#define KILN_CUDA_RESOLVE(member, symbol, ret, params) \
  if (!lib.resolve(d.api.member, #symbol) && missing == nullptr) missing = #symbol;
  KILN_CUDA_PROBE_API(KILN_CUDA_RESOLVE)
  KILN_CUDA_DRIVER_API(KILN_CUDA_RESOLVE)
#undef KILN_CUDA_RESOLVE
  if (d.api.cuDriverGetVersion != nullptr) d.api.cuDriverGetVersion(&st.version);
  if (missing != nullptr) {
    st.reason = fmt::format("the CUDA driver {} (version {}) lacks {}: it is older than kiln needs",
                            st.path, version_string(st.version), missing);
    return d;
  }
  if (CUresult r = d.api.cuInit(0); r != kCudaSuccess) {
    st.reason = fmt::format("cuInit failed: {} (driver {})", error_text(d.api, r), st.path);
    return d;
  }
  if (CUresult r = d.api.cuDeviceGetCount(&st.device_count); r != kCudaSuccess) {
    st.reason = fmt::format("cuDeviceGetCount failed: {}", error_text(d.api, r));
    st.device_count = 0;
    return d;
  }
  if (st.device_count <= 0) {
    st.device_count = 0;
    st.reason = fmt::format("no CUDA device (driver {} version {} reports none)", st.path,
                            version_string(st.version));
    return d;
  }
  st.usable = true;
  return d;
}

namespace {
const LoadedDriver& process_driver() {
  static const LoadedDriver d = [] {
    LoadedDriver out;
    if (!KILN_WITH_CUDA) {
      out.status.reason = "kiln was built without CUDA (KILN_WITH_CUDA=OFF)";
      return out;
    }
    static constexpr const char* kNames[] = {"libcuda.so.1"};
    out = load_driver(kNames);
    if (out.status.usable)
      KILN_INFO(Runtime, "CUDA driver {} ({}): {} device(s)", version_string(out.status.version),
                out.status.path, out.status.device_count);
    else
      KILN_INFO(Runtime, "CUDA is not available: {}", out.status.reason);
    return out;
  }();
  return d;
}
}  // namespace

const DriverStatus& driver_status() { return process_driver().status; }

const Driver& driver() {
  const LoadedDriver& d = process_driver();
  KILN_CHECK(d.status.usable, "CUDA is not available: {}", d.status.reason);
  return d.api;
}

void check(CUresult r, const char* what) {
  if (r == kCudaSuccess) [[likely]]
    return;
  fail("{} failed: {}", what, error_text(process_driver().api, r));
}

}  // namespace kiln::cuda
